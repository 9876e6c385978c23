import { CpeError, type CpeErrorOptions, ErrorCodes, isCpeError, isRetryable, messageOf } from '../errors.js';

/** A plugin's error, wrapped exactly once by the engine with step, document and attempt; `cause` is the original. */
export class StepError extends CpeError {
  readonly step: string;
  readonly documentId: number | null;
  readonly attempt: number;
  /** the code of the original error when it had one (e.g. PASSWORD_REQUIRED), else STEP_FAILED */
  readonly causeCode: string;

  constructor(
    step: string,
    documentId: number | null,
    attempt: number,
    cause: unknown,
    options: CpeErrorOptions = {},
  ) {
    const message = messageOf(cause);
    const where = documentId === null ? '' : ` on document ${documentId}`;
    super(ErrorCodes.STEP_FAILED, `step '${step}' failed${where} (attempt ${attempt}): ${message}`, {
      cause,
      retryable: isRetryable(cause),
      ...options,
    });
    this.step = step;
    this.documentId = documentId;
    this.attempt = attempt;
    this.causeCode = isCpeError(cause) ? cause.code : ErrorCodes.STEP_FAILED;
  }

  static wrap(step: string, documentId: number | null, attempt: number, error: unknown): StepError {
    return error instanceof StepError ? error : new StepError(step, documentId, attempt, error);
  }
}
