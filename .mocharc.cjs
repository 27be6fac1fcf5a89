// The unit suite's mocha settings. `npm test` runs every test file; `npm test -- FILE…` (or `npx mocha FILE…`)
// runs only the files named: mocha adds a config's `spec` to the files on its command line, so the default
// spec is left out when the command line names a test file or folder itself.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- mocha loads its config file with require()
const { existsSync } = require('node:fs');

const named = process.argv
  .slice(2)
  .some((arg) => !arg.startsWith('-') && (/\.[cm]?[jt]s$/.test(arg) || arg.includes('/')) && existsSync(arg));

module.exports = {
  'node-option': ['import=tsx'],
  ...(named ? {} : { spec: ['test/**/*.test.ts', 'clients/typescript/test/**/*.test.ts'] }),
  ignore: ['test/live/**'],
  timeout: 20000,
  reporter: 'spec',
};
