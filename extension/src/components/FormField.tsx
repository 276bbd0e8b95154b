/**
 * One row of the submit dialog's grid: label, input, hint, and, under them, why the
 * value is invalid (cleared as soon as it is valid again).
 */
import * as React from 'react';

export function FormField(props: {
  /** id of the input (the label points at it; the error is `${id}-error`). */
  id: string;
  label: string;
  /** Field key, for data-field on the error. */
  field: string;
  hint: React.ReactNode;
  hintTitle?: string;
  error: string | null;
  code?: boolean;
  testid?: string;
  children: React.ReactNode;
}): React.ReactElement {
  return (
    <div className="nbrunner-SubmitForm-row" data-testid={props.testid}>
      <label
        htmlFor={props.id}
        className={'nbrunner-SubmitForm-label' + (props.code ? ' nbrunner-mod-code' : '')}
      >
        {props.label}
      </label>
      {props.children}
      <span
        id={`${props.id}-hint`}
        className="nbrunner-SubmitForm-hint"
        title={props.hintTitle}
      >
        {props.hint}
      </span>
      <div
        id={`${props.id}-error`}
        className="nbrunner-FieldError"
        data-testid="nbrunner-field-error"
        data-field={props.field}
        role="alert"
        hidden={!props.error}
      >
        {props.error}
      </div>
    </div>
  );
}

/** Attributes of an input that may be invalid: aria-invalid and its descriptions. */
export function invalidProps(
  id: string,
  error: string | null
): { 'aria-invalid'?: true; 'aria-describedby': string } {
  return error
    ? { 'aria-invalid': true, 'aria-describedby': `${id}-hint ${id}-error` }
    : { 'aria-describedby': `${id}-hint` };
}
