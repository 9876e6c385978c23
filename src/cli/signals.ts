/**
 * Ctrl-C (SIGINT) and SIGTERM stop taking new work and let current steps finish or abandon cleanly; a second
 * signal exits at once (leases then expire and the next run resumes).
 */
export function cancelOnSignals(signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): {
  signal: AbortSignal;
  dispose(): void;
} {
  const controller = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      process.stderr.write(`\ncpe: ${signal} again, exiting now\n`);
      process.exit(130);
    }
    process.stderr.write(`\ncpe: ${signal}: stopping after the current steps (again to exit now)\n`);
    controller.abort(new Error(`cancelled by ${signal}`));
  };
  for (const signal of signals) process.on(signal, onSignal);
  return {
    signal: controller.signal,
    dispose: () => {
      for (const signal of signals) process.off(signal, onSignal);
    },
  };
}
