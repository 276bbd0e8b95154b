/**
 * The input of one notebook parameter, typed after its default value: a checkbox for
 * bool, a JSON textarea for list/dict, text otherwise (numbers too, so that what was
 * typed stays visible until it is fixed instead of being emptied by the browser).
 */
import * as React from 'react';

import { IParamField } from '../validation';

export function typeHint(type: string): string {
  switch (type) {
    case 'int':
      return 'integer';
    case 'float':
      return 'number';
    case 'bool':
      return 'boolean';
    case 'str':
      return 'text';
    case 'list':
      return 'JSON list';
    case 'dict':
      return 'JSON object';
    default:
      return 'any; empty = None';
  }
}

export function ParameterInput(props: {
  id: string;
  param: IParamField;
  /** The value shown when the parameter mirrors a job field. */
  mirrored: string | null;
  invalid: { 'aria-invalid'?: true; 'aria-describedby': string };
  onChange: (input: string | boolean) => void;
}): React.ReactElement {
  const { id, param: p } = props;
  const common = {
    id,
    name: p.name,
    'data-param': p.name,
    'data-param-type': p.type,
    ...props.invalid
  };
  if (props.mirrored !== null) {
    return (
      <input
        {...common}
        type="text"
        className="nbrunner-param-input jp-mod-styled"
        data-mirrors={p.mirrors}
        readOnly
        value={props.mirrored}
      />
    );
  }
  if (p.type === 'bool') {
    return (
      <input
        {...common}
        className="nbrunner-param-input"
        type="checkbox"
        checked={p.input === true}
        onChange={e => props.onChange(e.target.checked)}
      />
    );
  }
  if (p.type === 'list' || p.type === 'dict') {
    return (
      <textarea
        {...common}
        className="nbrunner-param-input nbrunner-param-json jp-mod-styled"
        spellCheck={false}
        rows={Math.min(6, Math.max(1, Math.ceil(String(p.input).length / 48)))}
        value={String(p.input)}
        onChange={e => props.onChange(e.target.value)}
      />
    );
  }
  const numeric = p.type === 'int' || p.type === 'float';
  return (
    <input
      {...common}
      type="text"
      inputMode={p.type === 'int' ? 'numeric' : p.type === 'float' ? 'decimal' : undefined}
      className="nbrunner-param-input jp-mod-styled"
      value={String(p.input)}
      placeholder={p.type === 'none' ? 'None' : undefined}
      spellCheck={numeric ? false : undefined}
      onChange={e => props.onChange(e.target.value)}
    />
  );
}
