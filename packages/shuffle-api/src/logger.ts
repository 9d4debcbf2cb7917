/** Structured fields attached to a log line. */
export type LogFields = Readonly<Record<string, unknown>>;

/**
 * A pino-compatible logger: `logger.info({ partitionId }, 'from -> to')` or `logger.info('message')`.
 * Libraries log through an injected Logger and never call `console`; the default is `noopLogger`.
 * Child loggers carry `{ jobId, partitionId, attempt }`.
 */
export interface Logger {
  debug(fieldsOrMessage: LogFields | string, message?: string): void;
  info(fieldsOrMessage: LogFields | string, message?: string): void;
  warn(fieldsOrMessage: LogFields | string, message?: string): void;
  error(fieldsOrMessage: LogFields | string, message?: string): void;
  child(bindings: LogFields): Logger;
}

const noop = (): void => {};

/** A logger that drops everything. */
export const noopLogger: Logger = Object.freeze({
  debug: noop,
  info: noop,
  warn: noop,
  error: noop,
  child: () => noopLogger,
});
