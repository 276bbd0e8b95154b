/** The time window of a GPU timeline (one of `RANGES`), with its label. */
import * as React from 'react';

import { RANGES } from '../timeline';

export function RangeSelect(props: {
  id: string;
  testid: string;
  /** Index into RANGES. */
  value: number;
  onChange: (value: number) => void;
}): React.ReactElement {
  return (
    <>
      <label htmlFor={props.id}>Range</label>
      <select
        id={props.id}
        className="nbrunner-Select"
        data-testid={props.testid}
        value={props.value}
        onChange={e => props.onChange(Number(e.target.value))}
      >
        {RANGES.map((r, i) => (
          <option key={r.label} value={i}>
            {r.label}
          </option>
        ))}
      </select>
    </>
  );
}
