import type { Command } from '../command.js';
import { clusterCommand } from './cluster-command.js';
import { gcCommand } from './gc-command.js';
import { jobsCommand } from './jobs-command.js';
import { planCommand } from './plan-command.js';
import { runCommand } from './run-command.js';
import { shuffleServerCommand } from './shuffle-server-command.js';
import { taskExecutorCommand } from './task-executor-command.js';
import { uiCommand } from './ui-command.js';

/**
 * Every `weft` subcommand, in `weft --help` order. A new command is one file under commands/ exporting a
 * `Command`, plus one line here.
 */
export const COMMANDS: readonly Command[] = [runCommand, planCommand, jobsCommand, uiCommand, gcCommand, shuffleServerCommand, taskExecutorCommand, clusterCommand];
