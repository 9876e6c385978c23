import { StepError } from '../engine/step-error.js';
import { ConfigError, ErrorCodes, isCpeError } from '../errors.js';
import { redactCredentials } from '../util/credentials.js';
import { printableLines } from '../util/printable.js';
import { EXIT_FAILURES, EXIT_USAGE } from './exit-codes.js';

/**
 * The one error printer: the message and its cause chain, and the exit code that goes with it. A message naming a
 * file shows its name's control characters rather than sending them to the terminal (printableLines).
 */
export function printError(
  error: unknown,
  write: (text: string) => void = (t) => process.stderr.write(t),
): number {
  const lines: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current && depth < 6; depth++) {
    // a message may quote a configured URL with its password, or an echoed API key
    const message = printableLines(
      redactCredentials(current instanceof Error ? current.message : String(current)),
    );
    if (!lines.some((l) => l.includes(message)))
      lines.push(depth === 0 ? `cpe: ${message}` : `  caused by: ${message}`);
    current = current instanceof Error ? current.cause : undefined;
  }
  if (process.env.CPE_DEBUG && error instanceof Error && error.stack) lines.push(error.stack);
  write(`${lines.join('\n')}\n`);
  return isUsageOrConfiguration(error) ? EXIT_USAGE : EXIT_FAILURES;
}

/**
 * The errors the user ends by changing the command or the configuration (exit 2). A collection built with another
 * model than the one configured is one (its message says which setting to change), as is a Qdrant collection this
 * data set did not make: neither goes away by running the command again.
 */
const CONFIGURATION_CODES: ReadonlySet<string> = new Set([
  ErrorCodes.USAGE,
  ErrorCodes.CONFIG_INVALID,
  ErrorCodes.COLLECTION_MISMATCH,
]);

function isUsageOrConfiguration(error: unknown): boolean {
  // a run stopped by one of its steps (collection_setup refusing a collection): the step's own error tells
  const own = error instanceof StepError ? error.cause : error;
  return own instanceof ConfigError || (isCpeError(own) && CONFIGURATION_CODES.has(own.code));
}
