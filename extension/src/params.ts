/**
 * Notebook parameters: a client-side fallback reader of the `parameters` cell
 * (used only when the server cannot answer GET /notebook-parameters), and the
 * conversion between typed parameter values and the dialog's form inputs.
 */
import { INotebookParameter, JSONValue, ParameterType } from './types';

/** Infer the parameter type of a JSON value. */
export function inferType(value: JSONValue): ParameterType {
  if (value === null) {
    return 'none';
  }
  if (typeof value === 'boolean') {
    return 'bool';
  }
  if (typeof value === 'number') {
    return Number.isInteger(value) ? 'int' : 'float';
  }
  if (typeof value === 'string') {
    return 'str';
  }
  if (Array.isArray(value)) {
    return 'list';
  }
  return 'dict';
}

/**
 * Convert a Python literal (as written in a parameters cell) to JSON, or
 * return undefined when it is not a plain literal.
 */
export function pythonLiteralToJSON(source: string): JSONValue | undefined {
  const text = source.trim();
  if (!text) {
    return undefined;
  }
  // Translate Python tokens outside of strings: True/False/None, single quotes,
  // tuples are left alone (they are not JSON and get skipped).
  let out = '';
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"' || ch === "'") {
      const quote = ch;
      let j = i + 1;
      let body = '';
      let closed = false;
      while (j < text.length) {
        const c = text[j];
        if (c === '\\' && j + 1 < text.length) {
          const next = text[j + 1];
          body += next === "'" ? "'" : c + next;
          j += 2;
          continue;
        }
        if (c === quote) {
          closed = true;
          break;
        }
        if (c === '"') {
          body += '\\"';
        } else {
          body += c;
        }
        j++;
      }
      if (!closed) {
        return undefined;
      }
      out += `"${body}"`;
      i = j + 1;
      continue;
    }
    const number = /^(\d[\d_]*\.?[\d_]*|\.\d[\d_]*)([eE][-+]?\d+)?/.exec(
      text.slice(i)
    );
    if (number) {
      const value = Number(number[0].replace(/_/g, ''));
      if (!Number.isFinite(value)) {
        return undefined;
      }
      out += String(value);
      i += number[0].length;
      continue;
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i));
    if (word) {
      const w = word[0];
      if (w === 'True') {
        out += 'true';
      } else if (w === 'False') {
        out += 'false';
      } else if (w === 'None') {
        out += 'null';
      } else {
        return undefined; // a name or a call: not a literal
      }
      i += w.length;
      continue;
    }
    out += ch;
    i++;
  }
  // Python allows trailing commas in lists and dicts.
  out = out.replace(/,\s*([\]}])/g, '$1');
  try {
    return JSON.parse(out) as JSONValue;
  } catch {
    return undefined;
  }
}

const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*[^=]+?)?\s*=(?!=)\s*(.*)$/;

/**
 * Read `name = literal` lines of a parameters cell's source.
 */
export function parseParametersSource(source: string): INotebookParameter[] {
  const result: INotebookParameter[] = [];
  for (const raw of source.split('\n')) {
    const line = raw.replace(/\s+$/, '');
    if (!line || /^\s/.test(line) || line.startsWith('#')) {
      continue;
    }
    const match = ASSIGNMENT.exec(line);
    if (!match) {
      continue;
    }
    const name = match[1];
    const rest = match[2];
    // Try the whole rest of the line, then cut at each '#' (a comment).
    const candidates = [rest];
    for (let k = rest.indexOf('#'); k >= 0; k = rest.indexOf('#', k + 1)) {
      candidates.push(rest.slice(0, k));
    }
    for (const candidate of candidates) {
      const value = pythonLiteralToJSON(candidate);
      if (value !== undefined) {
        const comment = rest.slice(candidate.length).replace(/^\s*#\s*/, '');
        const param: INotebookParameter = {
          name,
          value,
          type: inferType(value)
        };
        if (candidate !== rest && comment) {
          param.help = comment;
        }
        // A float literal such as `1.0` is parsed as the number 1.
        if (param.type === 'int' && /[.eE]/.test(candidate)) {
          param.type = 'float';
        }
        const existing = result.findIndex(p => p.name === name);
        if (existing >= 0) {
          result.splice(existing, 1);
        }
        result.push(param);
        break;
      }
    }
  }
  return result;
}

interface ICellLike {
  cell_type?: string;
  source?: string | string[];
  metadata?: { tags?: string[]; [key: string]: unknown };
}

/**
 * Find the `parameters`-tagged cell of a notebook (nbformat JSON) and read it.
 */
export function parametersFromNotebook(notebook: {
  cells?: ICellLike[];
}): INotebookParameter[] {
  for (const cell of notebook.cells ?? []) {
    const tags = cell.metadata?.tags ?? [];
    if (cell.cell_type === 'code' && tags.includes('parameters')) {
      const source = Array.isArray(cell.source)
        ? cell.source.join('')
        : (cell.source ?? '');
      return parseParametersSource(source);
    }
  }
  return [];
}

/** JSON on one line with Python-like spacing: `[1, 2]`, `{"a": 1}`. */
export function formatJSON(value: JSONValue): string {
  if (Array.isArray(value)) {
    return `[${value.map(formatJSON).join(', ')}]`;
  }
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}: ${formatJSON(v)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value);
}

/** The text shown in a form input for a parameter value. */
export function valueToInput(type: string, value: JSONValue): string | boolean {
  switch (type) {
    case 'bool':
      return value === true;
    case 'int':
    case 'float':
      return value === null || value === undefined ? '' : String(value);
    case 'str':
      return value === null || value === undefined ? '' : String(value);
    case 'list':
    case 'dict':
      return formatJSON(value);
    case 'none':
    default:
      return value === null || value === undefined
        ? ''
        : typeof value === 'string'
          ? value
          : formatJSON(value);
  }
}

/**
 * Convert a form input back to a typed value. Throws an Error whose message
 * says what is wrong.
 */
export function inputToValue(
  name: string,
  type: string,
  input: string | boolean
): JSONValue {
  if (type === 'bool') {
    return input === true;
  }
  const text = String(input);
  switch (type) {
    case 'int': {
      if (!/^\s*[-+]?\d+\s*$/.test(text)) {
        throw new Error(`Parameter "${name}" must be an integer.`);
      }
      return parseInt(text, 10);
    }
    case 'float': {
      const value = Number(text);
      if (text.trim() === '' || !Number.isFinite(value)) {
        throw new Error(`Parameter "${name}" must be a number.`);
      }
      return value;
    }
    case 'str':
      return text;
    case 'list':
    case 'dict': {
      let value: JSONValue;
      try {
        value = JSON.parse(text) as JSONValue;
      } catch (error) {
        throw new Error(
          `Parameter "${name}" must be JSON (${(error as Error).message}).`
        );
      }
      if (type === 'list' && !Array.isArray(value)) {
        throw new Error(`Parameter "${name}" must be a JSON list, e.g. [1, 2].`);
      }
      if (
        type === 'dict' &&
        (value === null || typeof value !== 'object' || Array.isArray(value))
      ) {
        throw new Error(
          `Parameter "${name}" must be a JSON object, e.g. {"a": 1}.`
        );
      }
      return value;
    }
    case 'none':
    default: {
      // Untyped (default None): empty means None, JSON when it parses,
      // otherwise the text itself.
      const trimmed = text.trim();
      if (trimmed === '' || trimmed === 'None' || trimmed === 'null') {
        return null;
      }
      try {
        return JSON.parse(trimmed) as JSONValue;
      } catch {
        return text;
      }
    }
  }
}
