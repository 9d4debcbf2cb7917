import type { LogFields, Logger } from '@weft/shuffle-api';

/** A Logger that keeps warnings (message and fields) for assertions. */
export class RecordingLogger implements Logger {
  readonly warnings: { message: string; fields: LogFields }[] = [];
  debug(): void {}
  info(): void {}
  error(): void {}
  warn(fieldsOrMessage: LogFields | string, message?: string): void {
    if (typeof fieldsOrMessage === 'string') this.warnings.push({ message: fieldsOrMessage, fields: {} });
    else this.warnings.push({ message: message ?? '', fields: fieldsOrMessage });
  }
  child(): Logger {
    return this;
  }
}
