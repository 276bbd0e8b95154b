/** One host of the cluster view: its GPU slots, each free or with the job holding it. */
import * as React from 'react';

import { IHost } from '../types';

export function HostSlots(props: {
  host: IHost;
  /** Job id -> color (the job's color in the timeline). */
  colors: Map<string, string>;
  /** Job id -> name. */
  names: Map<string, string>;
}): React.ReactElement {
  const { host } = props;
  const slots = host.slots ?? [];
  const busy = slots.filter(s => s.job).length;
  return (
    <div className="nbrunner-Host" data-testid="nbrunner-host" data-host={host.name}>
      <h4 className="nbrunner-Host-name">
        {host.name}
        <span className="nbrunner-Host-usage">
          {busy}/{slots.length} busy
        </span>
      </h4>
      <ul className="nbrunner-Slots" aria-label={`Slots of ${host.name}`}>
        {slots.map(slot => {
          const name = slot.job ? (props.names.get(slot.job) ?? slot.job) : null;
          const label = slot.job
            ? `Slot ${slot.index}: job ${name} (${slot.job})`
            : `Slot ${slot.index}: free`;
          return (
            <li
              key={slot.index}
              className={'nbrunner-Slot' + (slot.job ? ' nbrunner-mod-busy' : '')}
              data-testid="nbrunner-slot"
              data-slot-index={slot.index}
              data-job-id={slot.job ?? ''}
              title={label}
              aria-label={label}
              style={
                slot.job
                  ? ({ '--nbrunner-slot-color': props.colors.get(slot.job) } as React.CSSProperties)
                  : undefined
              }
            >
              <span className="nbrunner-Slot-index">{slot.index}</span>
              <span className="nbrunner-Slot-job">{slot.job ? name : 'free'}</span>
            </li>
          );
        })}
      </ul>
    </div>
  );
}
