import { CpeError, ErrorCodes } from '../errors.js';

/** Waits `ms`; an aborted signal ends the wait early with a CANCELLED error. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new CpeError(ErrorCodes.CANCELLED, 'cancelled while waiting'));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new CpeError(ErrorCodes.CANCELLED, 'cancelled while waiting'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
