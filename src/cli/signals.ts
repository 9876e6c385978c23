/**
 * Ctrl-C (SIGINT) and SIGTERM: the signal aborts, and a run given it as its `drain` stops taking new work, hands
 * back what it claimed ahead and lets the documents in flight finish their steps. A second signal exits at once
 * (leases then expire and the next run resumes).
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
    process.stderr.write(
      `\ncpe: ${signal}: stopping once the documents in flight are done; nothing new starts (again to exit now)\n`,
    );
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
