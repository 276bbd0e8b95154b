/** The header of a panel or view: its title and, beside it, its tools (buttons, filters). */
import * as React from 'react';

export function PanelHeader(props: {
  title: string;
  children?: React.ReactNode;
}): React.ReactElement {
  return (
    <div className="nbrunner-JobsPanel-header">
      <h2 className="nbrunner-JobsPanel-title">{props.title}</h2>
      <div className="nbrunner-JobsPanel-tools">{props.children}</div>
    </div>
  );
}
