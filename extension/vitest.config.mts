// Unit tests of the extension's pure modules (test/*.test.ts), in Node: no browser, no
// JupyterLab.  Local times are UTC so that clock-dependent expectations hold anywhere.
import { defineConfig } from 'vitest/config';

process.env.TZ = 'UTC';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node'
  }
});
