#!/usr/bin/env node
// The package's `bin` (`npx azure-functions-idempotency ...`): a file that exists before any build, so that npm links
// it at install time even in a fresh clone of a workspace (npm skips a bin whose target does not exist yet, and the
// build's `dist/` comes after `npm ci`). It runs the built console, or says what to do when it is not built.
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const main = join(__dirname, '..', 'dist', 'operator', 'cli', 'main.js');
if (!existsSync(main)) {
  process.stderr.write(`azure-functions-idempotency: not built yet (${main} is missing): run \`npm run build\` in the repository first\n`);
  process.exitCode = 1;
} else {
  require(main);
}
