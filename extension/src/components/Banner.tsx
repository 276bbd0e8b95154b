/** A message across a view that needs attention (`role=alert`): a warning or an error. */
import * as React from 'react';

export function Banner(props: {
  tone: 'warn' | 'error';
  testid?: string;
  children: React.ReactNode;
}): React.ReactElement {
  return (
    <div
      className={`nbrunner-Banner nbrunner-Banner-${props.tone}`}
      data-testid={props.testid}
      role="alert"
    >
      {props.children}
    </div>
  );
}
