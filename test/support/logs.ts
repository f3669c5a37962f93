/**
 * A Powertools Logger (and its child loggers) that keeps every log line it would print, as the JSON object
 * it would print, so a test can assert what was logged.
 *
 * @example
 * const logger = new CapturingLogger({ serviceName: 'claimflow' });
 * createSqsHandler(controller, { logger });
 * assert.ok(logger.lines.some((l) => l.message === 'forbidden: update persistentvolumes'));
 */
import { Logger } from '@aws-lambda-powertools/logger';

type LoggerOptions = ConstructorParameters<typeof Logger>[0];

/** Every line logged through this logger or its children. */
export class CapturingLogger extends Logger {
  readonly lines: Array<Record<string, any>>;

  constructor(options: LoggerOptions = {}, lines: Array<Record<string, any>> = []) {
    super({ logLevel: 'DEBUG', ...options });
    this.lines = lines;
  }

  protected override printLog(_logLevel: number, log: { getAttributes(): Record<string, unknown> } & object): void {
    this.lines.push(JSON.parse(JSON.stringify(log.getAttributes())));
  }

  protected override createLogger(options?: LoggerOptions): Logger {
    return new CapturingLogger(options, this.lines);
  }

  /** The printed text of every line (what would reach CloudWatch Logs). */
  text(): string {
    return this.lines.map((l) => JSON.stringify(l)).join('\n');
  }
}
