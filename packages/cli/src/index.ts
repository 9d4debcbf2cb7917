// @weft/cli as a library: run `weft` in-process (tests, embedding) or add commands.
export * from './command.js';
export { globalUsage, runCli } from './cli.js';
export { COMMANDS } from './commands/index.js';
export { parseCommandArgs, usageError } from './parse-command-args.js';
export { readJsonFile } from './read-json-file.js';
