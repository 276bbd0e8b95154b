/**
 * A button that acts on something (a row's job, schedule or model, or a panel): a stable
 * `data-testid`, an accessible name, and a warning or danger look for what cannot be undone.
 */
import * as React from 'react';

export interface IActionButtonProps {
  testid: string;
  onClick: () => void;
  /** The accessible name, when the visible text alone does not say what is acted on. */
  label?: string;
  /** Tooltip. */
  title?: string;
  disabled?: boolean;
  /** `warn`: stops something (cancel, stop); `danger`: deletes. */
  tone?: 'warn' | 'danger';
  /** More classes, for layout. */
  className?: string;
  children: React.ReactNode;
}

const TONES = { warn: ' nbrunner-Button-warn', danger: ' nbrunner-mod-danger' };

export function ActionButton(props: IActionButtonProps): React.ReactElement {
  return (
    <button
      type="button"
      className={
        'nbrunner-Button' +
        (props.tone ? TONES[props.tone] : '') +
        (props.className ? ` ${props.className}` : '')
      }
      data-testid={props.testid}
      aria-label={props.label}
      title={props.title}
      disabled={props.disabled}
      onClick={props.onClick}
    >
      {props.children}
    </button>
  );
}
