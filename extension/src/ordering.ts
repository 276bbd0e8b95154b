/**
 * The order the Models panel lists models in: by name, the newest version first.  (Jobs come
 * in the server's order, newest first: `job-table.ts`.)
 */
import { IModel } from './types';

/** Models by name, newest version first within a name. */
export function sortModels(models: IModel[]): IModel[] {
  return models
    .slice()
    .sort((a, b) => (a.name === b.name ? b.version - a.version : a.name < b.name ? -1 : 1));
}
