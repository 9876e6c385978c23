import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DocumentRow } from '../db/entities.js';
import { ConfigError, CpeError, describeError, ErrorCodes, isRetryable, messageOf } from '../errors.js';
import { describeRetry, onLlmRetry } from '../llm/retry-notices.js';
import { commandLine } from '../util/command-line.js';
import { redactCredentials } from '../util/credentials.js';
import { abortableSleep } from '../util/sleep.js';
import { lowerOtherThreads } from '../util/thread-priority.js';
import { sqlTime } from '../util/time.js';
import {
  type ArchivedFile,
  archiveFile,
  findArchived,
  findArchivedMany,
  INLINE_ARCHIVE_BYTES,
  readInlineArchive,
  storeInArchive,
} from './archive.js';
import {
  type CheckpointRow,
  inPlan,
  loadCheckpoints,
  othersWriting,
  profileKeysOf,
  saveCheckpoints,
  skippedCheckpointHash,
  stepsToRun,
  supersededBy,
} from './checkpoints.js';
import {
  ContentAlreadyVersioned,
  createDocumentVersion,
  createDocumentVersions,
  getDocument,
  markPathDeleted,
  mergeDocumentMetadata,
  setDocumentStatus,
  supersededReason,
} from './documents.js';
import type { Engine } from './engine.js';
import { CompletionBatcher, retractLeftovers } from './finish-document.js';
import type { Plan, PlannedStep } from './plan.js';
import type {
  DocumentRef,
  Logger,
  RunInfo,
  RunStepContext,
  StepContext,
  StepCounts,
  StepOutcome,
} from './plugin.js';
import {
  backoffMs,
  claimQueueItems,
  closeItemsOfGoneFile,
  completeQueueItem,
  countGivenUpFiles,
  deferQueueItem,
  failQueueItem,
  fileInFlight,
  heartbeat,
  type QueueItem,
  releaseLeasesOfGoneProcesses,
  releaseQueueItem,
  retireFailures,
  runsAlone,
  startQueueItem,
  undeferQueueItem,
} from './queue.js';
import { pluginNamed, watchPluginCall, watchStepRun } from './registry.js';
import { HAS_DERIVED_ROWS } from './retract.js';
import { type LogLevel, noTotals, RunLog, type RunTotals } from './run-log.js';
import { owedPostSteps, saveRunStepStates } from './run-step-states.js';
import { listableFile, pathsUnder, storedSourceRoot, unreadableFiles } from './scan.js';
import { StepError } from './step-error.js';

/**
 * The bytes of files held in SQL up to this size come with their claim (a statement fewer per document, a round
 * trip on MariaDB); larger ones are read when their document starts, so the items claimed ahead hold little.
 */
const CLAIMED_BYTES = 256 * 1024;

/**
 * Items that take less than this (on average) are claimed two claims ahead; slower ones only a slot's worth ahead,
 * so that several workers share a queue of slow documents instead of the first one holding it all.
 */
const FAST_ITEM_MS = 1000;

/** How long a delete item waits for a version of its file that is being processed before it looks again. */
const DELETE_WAIT_MS = 5000;

/**
 * The step's promise, or a CANCELLED rejection as soon as the signal aborts: a step that ignores its signal (or
 * never settles) does not keep a cancelled run, and its process, from ending. What the step still does after
 * that is let go.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new CpeError(ErrorCodes.CANCELLED, 'cancelled'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new CpeError(ErrorCodes.CANCELLED, 'cancelled'));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** A skip's reason as text: a plugin may hand over anything. */
const reasonText = (reason: unknown): string =>
  reason === undefined || reason === null || reason === '' ? 'no reason given' : messageOf(reason);

/**
 * What a step's run() returned, as its result: nothing (or `{ status: 'ok' }`) is ok, ctx.skip(reason) skipped.
 * Any other status is a plugin's way of saying it failed (`{ status: 'failed', reason }`): a permanent failure with
 * what it said, not an ok.
 */
function stepResult(outcome: unknown): { status: 'ok' | 'skipped'; reason?: string } {
  if (typeof outcome !== 'object' || outcome === null || !('status' in outcome)) return { status: 'ok' };
  const { status, reason, error, message } = outcome as Record<string, unknown>;
  if (status === 'ok') return { status: 'ok' };
  if (status === 'skipped') return { status: 'skipped', reason: reasonText(reason) };
  const said = [reason, error, message].find((v) => v !== undefined && v !== null);
  throw new CpeError(
    ErrorCodes.STEP_FAILED,
    `the step returned status ${JSON.stringify(status)}${said === undefined ? '' : `: ${messageOf(said)}`} (a step fails by throwing, skips with ctx.skip(reason), and otherwise returns nothing)`,
  );
}

export interface RunOptions {
  plan: Plan;
  /** folder for detect; undefined = process what is queued */
  sourceDir?: string;
  concurrency: number;
  /** ignore checkpoints: every step runs again (caches of embeddings and LLM answers still apply) */
  force?: boolean;
  /** read and hash every source file, even those whose stat signature is unchanged since they were hashed */
  rehash?: boolean;
  /** the scan leaves out files changed less than this long before it: still being written (`cpe watch`) */
  leaveChangedWithinMs?: number;
  /** run the pre steps (detect, ...) — false for `cpe process` */
  runPreSteps?: boolean;
  /** run the post steps (index_optimize, ...) — false for `cpe scan` */
  runPostSteps?: boolean;
  /** stop after this many queue items */
  limit?: number;
  /** claim only the queue items of these source paths (`cpe file`) */
  onlyPaths?: readonly string[];
  /** keep polling the queue until the signal aborts (`cpe worker`) */
  keepPolling?: boolean;
  signal?: AbortSignal;
  /**
   * Stops the run gently (Ctrl-C, SIGTERM: cpe's commands): no more items are claimed, the ones claimed ahead go back
   * to the queue, and the items in flight finish their steps; the run ends `cancelled`. `signal` stops the steps too.
   */
  drain?: AbortSignal;
  command?: string;
  onEvent?: (event: RunEvent) => void;
  /**
   * Shows the run's warnings and errors as they happen, one line each ("warn [extract doc 3]: ..."); default: on
   * stderr. Every line is in ki_dev's pipeline_log either way.
   */
  onLog?: (level: LogLevel, line: string) => void;
  /**
   * Receives the run's logger once the run is recorded: what the caller writes with it goes into ki_dev's
   * pipeline_log under this run (`cpe worker` says there that a pipeline edit was refused or taken).
   */
  onRunLogger?: (logger: Logger) => void;
}

export type RunEvent =
  | { type: 'run-started'; runId: number; pipeline: string; profile: Record<string, string> }
  | { type: 'document-started'; item: QueueItem }
  | {
      type: 'document-finished';
      item: QueueItem;
      documentId: number | null;
      status: 'done' | 'failed' | 'released' | 'skipped';
      error?: string;
    }
  | {
      type: 'step-finished';
      step: string;
      /** the step's type (its plugin's name) */
      stepType: string;
      documentId: number | null;
      status: 'ok' | 'failed' | 'skipped';
      ms: number;
      reason?: string;
      /** what the step reported (ctx.report): items in and out and counts of its own, e.g. detect's new files */
      counts: StepCounts;
    };

export interface RunSummary extends RunTotals {
  runId: number;
  /**
   * ok also when items were taken over (docsTakenOver): their work is not lost, the process that holds them now does
   * it (and should it end without finishing, the next run or worker takes them when its lease runs out)
   */
  status: 'ok' | 'failed' | 'cancelled';
  durationMs: number;
  failures: Array<{ path: string; documentId: number | null; error: string }>;
  /**
   * Items of docsTotal that another process took over from this run (their lease ran out while this process was
   * held up: a step that blocked the event loop, a stalled database connection) and that this run did not finish
   * itself later: neither done, failed nor skipped here.
   */
  docsTakenOver: number;
  takenOver: Array<{ path: string; documentId: number | null }>;
  /**
   * Documents of unchanged files the run's scan queued again: every one with `force`, else those not up to date with
   * the pipeline (a step added or its config changed). The detect step's counts show only new, changed and deleted.
   */
  docsRequeued: number;
}

/**
 * The options as the run loop needs them: concurrency a whole number of at least 1, limit of at least 0. A caller of
 * the programmatic API may pass anything (the CLI checks its flags): 0 made a run that claimed items and never
 * started one, NaN one that did nothing and said ok.
 */
function checkedRunOptions(options: RunOptions): RunOptions {
  const shown = (value: unknown) => (typeof value === 'string' ? JSON.stringify(value) : String(value));
  const concurrency = Math.floor(Number(options.concurrency));
  if (!(concurrency >= 1))
    throw new ConfigError(
      ErrorCodes.USAGE,
      `concurrency must be a whole number of at least 1 (is ${shown(options.concurrency)})`,
    );
  if (options.limit === undefined) return { ...options, concurrency };
  const limit = Math.floor(Number(options.limit));
  if (!(limit >= 0))
    throw new ConfigError(
      ErrorCodes.USAGE,
      `limit must be a whole number of at least 0 (is ${shown(options.limit)})`,
    );
  return { ...options, concurrency, limit };
}

/**
 * Runs a plan: run-scoped steps without document dependencies first, then the queued documents (several at a
 * time, each through its DAG, independent branches concurrently), then run-scoped steps that wait for
 * documents. Every attempted step is recorded in ki_dev; a failing document never stops the run.
 */
export async function runPipeline(engine: Engine, given: RunOptions): Promise<RunSummary> {
  const options = checkedRunOptions(given);
  const { plan } = options;
  // the process's other threads (V8's compiler and collector above all) yield to this one, which runs the pipeline
  if (engine.config.helperThreadNice > 0) lowerOtherThreads(engine.config.helperThreadNice);
  const db = engine.dbs.content.sql;
  // a folder reached through a symbolic link is stored under its real path: one set of documents either way
  if (options.sourceDir) options.sourceDir = await storedSourceRoot(db, options.sourceDir);
  const runLog = new RunLog(
    engine.dbs.log.sql,
    engine.config.logLevel,
    options.onLog ?? ((_level, line) => process.stderr.write(`${line}\n`)),
    // a dead run's documents count as done once their queue items are: what committed, not what was begun
    { content: db },
  );
  const startedAt = Date.now();
  const runId = await runLog.startRun({
    pipelineId: plan.pipeline.id,
    pipelineName: plan.pipeline.name,
    versionHash: plan.versionHash,
    command: options.command ?? commandLine(),
    profile: engine.profile,
  });
  const worker = `${os.hostname()}:${process.pid}:${runId}`;
  const leaseMs = engine.config.leaseSeconds * 1000;
  const totals: RunTotals = noTotals();
  const failures: RunSummary['failures'] = [];
  /**
   * Queue items of this run whose attempt failed, with their entry in `failures`: an item retried within the run
   * (a retryable failure whose next attempt came before the run ended) counts by its last outcome, once.
   */
  const failedInRun = new Map<number, RunSummary['failures'][number]>();
  const seenItems = new Set<number>();
  /** items another process took over from this run, by id (an item this run claims back and ends leaves it) */
  const takenOver = new Map<number, RunSummary['takenOver'][number]>();
  const recordFailure = (itemId: number, failure: RunSummary['failures'][number]) => {
    forgetEarlierFailure(itemId);
    failures.push(failure);
    failedInRun.set(itemId, failure);
  };
  function forgetEarlierFailure(itemId: number) {
    const earlier = failedInRun.get(itemId);
    if (!earlier) return;
    failedInRun.delete(itemId);
    failures.splice(failures.indexOf(earlier), 1);
    totals.docsFailed--;
  }
  const runController = new AbortController();
  const onAbort = () => runController.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', onAbort, { once: true });
  // a signal aborted before the run: cancelled from the start, nothing claimed
  if (options.signal?.aborted) onAbort();
  const runLogger = runLog.logger({ runId });
  /**
   * The caller's onEvent, whose failure is its own: logged, never the run's (a throw on document-finished was an
   * unhandled rejection that ended the host process; on document-started it left claimed items locked). Said once
   * per run, as onLog's failure is: a callback that throws on every event made a warning (and a ki_dev row) of each.
   */
  let onEventFailed = false;
  const emit = (event: RunEvent) => {
    if (!options.onEvent) return;
    const failed = (error: unknown) => {
      if (onEventFailed) return;
      onEventFailed = true;
      runLogger.warn(
        `onEvent threw on '${event.type}' (ignored, and so are its later failures in this run): ${describeError(error, 500)}`,
      );
    };
    try {
      // an async callback's rejection is its failure too (TypeScript lets one stand for `(event) => void`)
      const returned: unknown = options.onEvent(event);
      if (returned instanceof Promise) returned.catch(failed);
    } catch (error) {
      failed(error);
    }
  };
  emit({ type: 'run-started', runId, pipeline: plan.pipeline.name, profile: engine.profile });
  options.onRunLogger?.(runLogger);
  runLogger.info(`run started: pipeline '${plan.pipeline.name}' (${plan.versionHash})`, {
    profile: engine.profile,
  });
  if (options.sourceDir && options.runPreSteps !== false && !plan.hasStepType('detect'))
    runLogger.warn(
      `pipeline '${plan.pipeline.name}' has no detect step: ${options.sourceDir} is not scanned, only what is queued already is processed`,
    );

  const pipelineInfo = {
    id: plan.pipeline.id,
    name: plan.pipeline.name,
    versionHash: plan.versionHash,
    hasStepType: plan.hasStepType,
    stepConfigs: (type: string) => plan.steps.filter((s) => s.type === type).map((s) => s.config),
  };
  const runInfo: RunInfo = {
    id: runId,
    sourceDir: options.sourceDir,
    force: options.force ?? false,
    rehash: options.rehash ?? false,
    leaveChangedWithinMs: options.leaveChangedWithinMs,
    // awaited (and any failure thrown) where the first document is claimed, as a setup started there would be
    expectDocuments: () => void setUpDocumentSteps().catch(() => undefined),
  };
  /**
   * The documents this run finished, for its post steps (run-scoped, ctx.documents): kept only when the plan has
   * post steps, and without their bytes (a document's archive file is written as it finishes instead), so that a
   * run's memory does not grow with the number of documents.
   */
  const processed: DocumentRef[] = [];
  /** files the run's scan could not read: failures, but no documents for the post steps */
  let unreadableCount = 0;
  const keepProcessed = plan.steps.some((s) => s.phase === 'post');
  let runError: unknown;
  // Backpressure (scale-out): a document that failed for a retryable reason (Ollama or Qdrant down, the database
  // restarting) pauses this process's claims, longer with every such failure in a row, so an outage is not fed the
  // whole queue; a finished document lifts the pause.
  const backpressure = {
    failures: 0,
    pausedUntil: 0,
    failed() {
      this.failures++;
      this.pausedUntil =
        Date.now() + backoffMs(this.failures, Math.max(1, engine.config.retryBaseMs) * 2, 30_000);
    },
    succeeded() {
      this.failures = 0;
      this.pausedUntil = 0;
    },
  };

  const baseContext = (
    step: PlannedStep,
    documentId: number | null,
    counts: StepCounts,
    signal: AbortSignal,
  ): RunStepContext => ({
    config: step.config,
    step: { id: step.id, name: step.name, type: step.type, lineageHash: step.lineageHash },
    pipeline: pipelineInfo,
    run: runInfo,
    db,
    providers: engine.providers,
    settings: engine.settings,
    log: runLog.logger({ runId, stepName: step.name, documentId }),
    signal,
    report(more: StepCounts) {
      if (typeof more !== 'object' || more === null) {
        // a plugin's slip (report(null), report(3)) is a warning, as a count that is not a number is, not a failure
        runLog
          .logger({ runId, stepName: step.name, documentId })
          .warn(`report() takes an object of counts ({ name: number }), not ${messageOf(more)}; not counted`);
        return;
      }
      for (const [key, value] of Object.entries(more)) {
        if (typeof value === 'number' && Number.isFinite(value)) counts[key] = (counts[key] ?? 0) + value;
        else
          runLog
            .logger({ runId, stepName: step.name, documentId })
            .warn(`report(): ${key} is not a finite number (${String(value)}); not counted`);
      }
    },
    // a reason that is not text (an object) is kept readable, not as "[object Object]"
    skip: (reason: string): StepOutcome => ({ status: 'skipped', reason: reasonText(reason) }),
    mergeDocumentMetadata: (id, patch) => mergeDocumentMetadata(db, id, patch),
  });

  /** Runs one step with retries; records every attempt. Returns the outcome. */
  const executeStep = async (
    step: PlannedStep,
    makeContext: (counts: StepCounts, signal: AbortSignal) => RunStepContext,
    signal: AbortSignal,
    documentId: number | null,
    queueId: number | null,
  ): Promise<{ status: 'ok' | 'skipped'; reason?: string } | { status: 'failed'; error: StepError }> => {
    const maxAttempts = engine.config.maxAttempts;
    for (let attempt = 1; ; attempt++) {
      const counts: StepCounts = {};
      const began = Date.now();
      let result: { status: 'ok' | 'skipped'; reason?: string } | { status: 'failed'; error: StepError };
      try {
        if (signal.aborted) throw new CpeError(ErrorCodes.CANCELLED, 'cancelled');
        // watched: a run() whose promise can never settle is failed, naming its plugin, when nothing else is left
        const outcome = await untilAborted(
          watchStepRun(
            step.plugin.run(makeContext(counts, signal) as StepContext),
            engine.registry,
            step,
            documentId,
          ),
          signal,
        );
        result = stepResult(outcome);
      } catch (error) {
        result = { status: 'failed', error: StepError.wrap(step.name, documentId, attempt, error) };
      } finally {
        // recorded in any case; a logging failure never changes the outcome
      }
      const finished = Date.now();
      const failed = result.status === 'failed' ? result.error : undefined;
      try {
        runLog.recordStep({
          runId,
          documentId,
          queueId,
          stepName: step.name,
          stepType: step.type,
          status: result.status,
          reason: result.status === 'skipped' ? result.reason : null,
          attempt,
          counts,
          errorCode: failed ? failed.causeCode : null,
          error: failed ? describeError(failed) : null,
          startedAt: began,
          finishedAt: finished,
        });
      } catch {
        /* see RunLog: never changes the outcome */
      }
      totals.tokensIn += counts.tokensIn ?? 0;
      totals.tokensOut += counts.tokensOut ?? 0;
      if (result.status === 'ok') totals.stepsOk++;
      else if (result.status === 'skipped') totals.stepsSkipped++;
      else totals.stepsFailed++;
      emit({
        type: 'step-finished',
        step: step.name,
        stepType: step.type,
        documentId,
        status: result.status,
        ms: finished - began,
        counts,
        reason:
          result.status === 'skipped'
            ? result.reason && redactCredentials(result.reason)
            : failed
              ? redactCredentials(failed.message)
              : undefined,
      });
      if (!failed) return result;
      const cancelled = signal.aborted;
      if (cancelled || !failed.retryable || attempt >= maxAttempts)
        return { status: 'failed', error: failed };
      const delay = backoffMs(attempt, engine.config.retryBaseMs, 30_000);
      runLog
        .logger({ runId, stepName: step.name, documentId })
        .warn(`retrying in ${delay} ms: ${failed.message}`);
      await abortableSleep(delay, signal);
    }
  };

  /**
   * A plugin's setup or teardown. A failing setup fails the run, recorded as a failed step run (no document) whose
   * error names the step, its pipeline_steps row and the plugin's file; a failing teardown (the step's work is done)
   * is a warning saying the same.
   */
  const lifecycle = async (step: PlannedStep, hook: 'setup' | 'teardown') => {
    const fn = step.plugin[hook];
    if (!fn) return;
    const began = Date.now();
    const plugin = engine.registry.get(step.type)?.source ?? 'builtin';
    try {
      // watched as run() is: one whose promise can never settle is given up, naming its plugin, once nothing is left
      await watchPluginCall(
        fn.call(step.plugin, baseContext(step, null, {}, runController.signal)),
        `${hook}() of step '${step.name}' (${pluginNamed(engine.registry, step.type)})`,
        () =>
          new Error('it never finished: nothing left in the process could settle the promise it returned'),
      );
    } catch (error) {
      const where = `pipeline_steps id=${step.id}, ${plugin === 'builtin' ? 'built-in' : `plugin ${plugin}`}`;
      const failed = new StepError(
        step.name,
        null,
        1,
        new CpeError(ErrorCodes.STEP_FAILED, `${hook} failed (${where}): ${messageOf(error)}`, {
          cause: error,
          retryable: isRetryable(error),
        }),
      );
      if (hook === 'teardown') {
        runLog.logger({ runId, stepName: step.name }).warn(describeError(failed));
        return;
      }
      runLog.recordStep({
        runId,
        documentId: null,
        queueId: null,
        stepName: step.name,
        stepType: step.type,
        status: 'failed',
        attempt: 1,
        errorCode: failed.causeCode,
        error: describeError(failed),
        startedAt: began,
        finishedAt: Date.now(),
      });
      throw failed;
    }
  };

  /** the run-scoped steps of a phase in plan order, or only those given (an idle run's owed post steps) */
  const runRunSteps = async (phase: 'pre' | 'post', only?: readonly PlannedStep[]) => {
    for (const step of only ?? plan.steps.filter((s) => s.phase === phase)) {
      if (runController.signal.aborted) return;
      if (phase === 'pre' && options.runPreSteps === false) continue;
      let outcome: Awaited<ReturnType<typeof executeStep>>;
      try {
        await lifecycle(step, 'setup');
        outcome = await executeStep(
          step,
          (counts, signal) => ({ ...baseContext(step, null, counts, signal), documents: processed }),
          runController.signal,
          null,
          null,
        );
        await lifecycle(step, 'teardown');
      } catch (error) {
        if (phase === 'post') await recordPostStep(step, { status: 'failed', error });
        throw error;
      }
      if (phase === 'post') await recordPostStep(step, outcome);
      if (outcome.status === 'failed') throw outcome.error;
    }
  };

  /**
   * A post step's outcome, in ki_content (run_step_states), where an idle run looks whether it is still owed. A
   * failure to write it is a warning: at worst the step runs once more than needed (its state stays 'pending').
   */
  const recordPostStep = (
    step: PlannedStep,
    outcome: { status: 'ok' | 'skipped' | 'failed'; error?: unknown },
  ) =>
    saveRunStepStates(db, plan.pipeline.id, runId, [
      {
        step,
        status: outcome.status === 'failed' ? 'failed' : 'ok',
        hash:
          outcome.status === 'skipped'
            ? skippedCheckpointHash(step.lineageHash, String(engine.settings.profileKey))
            : step.lineageHash,
        error: outcome.status === 'failed' ? describeError(outcome.error) : undefined,
      },
    ]).catch((error) =>
      runLogger.warn(`recording the outcome of step '${step.name}' failed: ${describeError(error, 300)}`),
    );

  const postSteps = plan.steps.filter((s) => s.phase === 'post');
  let postStepsOwed = false;
  /**
   * Once the run has processed documents, its post steps owe them a run (run_step_states 'pending') until they run:
   * a run cancelled or failed before them, or a worker (which runs none), leaves them to the next run even when that
   * one finds no documents.
   */
  const owePostSteps = async () => {
    if (postStepsOwed || postSteps.length === 0 || totals.docsTotal === unreadableCount) return;
    postStepsOwed = true;
    const pending = postSteps.map((step) => ({ step, status: 'pending' as const }));
    await saveRunStepStates(db, plan.pipeline.id, runId, pending).catch((error) =>
      runLogger.warn(`recording the steps after the documents as owed failed: ${describeError(error, 300)}`),
    );
  };

  /**
   * The post steps after the document phase. A pipeline with document steps that found no documents has nothing
   * new for them (an index_optimize would ANALYZE the whole index on every idle run), so such a run runs only the
   * ones still owed: failed, or not run since documents were processed or since their config changed.
   */
  const runPostSteps = async (idle: boolean) => {
    if (!idle) return runRunSteps('post');
    const owed = await owedPostSteps(db, plan.pipeline.id, postSteps, profileKeysOf(engine.settings));
    if (owed.length === 0) {
      runLogger.info('no documents in this run: the steps after them are not run');
      return;
    }
    const which = owed.map((o) => `'${o.step.name}' (${o.reason})`).join(', ');
    runLogger.info(`no documents in this run: of the steps after them only those owed run: ${which}`);
    await runRunSteps(
      'post',
      owed.map((o) => o.step),
    );
  };

  const documentSteps = plan.steps.filter((s) => s.phase === 'document');
  /** which of a document's checkpoints are of steps in this plan (the others may be stale: see supersededBy) */
  const planned = inPlan(db, documentSteps);
  let superseded: Map<string, readonly string[]> | undefined;
  /** per document step: the step types whose checkpoints (elsewhere, or of steps not planned) its run makes stale */
  const supersededTypes = () => {
    const plugins = engine.registry.all().map((r) => r.plugin);
    superseded ??= new Map(documentSteps.map((s) => [s.name, othersWriting(s, plugins)]));
    return superseded;
  };
  // document steps' setup runs once, when the run has its first document or a pre step expects some (a run with
  // nothing to do sets up nothing)
  let documentStepsSetUp: Promise<void> | undefined;
  const setUpDocumentSteps = () =>
    (documentStepsSetUp ??= (async () => {
      for (const step of documentSteps) await lifecycle(step, 'setup');
    })());
  /** once, after the document phase, for a run that set its document steps up */
  const tearDownDocumentSteps = async () => {
    const setUp = documentStepsSetUp;
    if (!setUp) return;
    documentStepsSetUp = undefined;
    // a setup a pre step started may still be running (or have failed: its failure is reported where it was awaited)
    await setUp.catch(() => undefined);
    for (const step of documentSteps) await lifecycle(step, 'teardown');
  };

  const completions = new CompletionBatcher(db, engine.providers, (message, context) =>
    runLogger.warn(message, context),
  );
  /** document rows created with the claim of their queue items (and small files' bytes), by queue item id */
  const prepared = new Map<number, { doc: DocumentRow; bytes?: Buffer }>();

  /**
   * Claims items and, in the same transaction, creates the document rows of new files whose bytes the scan
   * archived already: one commit for a batch of items instead of two per item, and the lookups and links shared
   * by the batch (a row insert per item). Anything unusual (no archived copy, a failing insert) is left to
   * processItem, which handles it per item. The rows are kept for processItem once the claim has committed (on
   * MariaDB a transaction may run twice: see SqlExecutor.transaction).
   */
  const claimBatch = async (want: number) => {
    const { items, rows } = await db.transaction(async (tx) => {
      const items = await claimQueueItems(tx, worker, want, leaseMs, options.onlyPaths);
      const fresh = items.filter((item) => item.action !== 'delete' && !item.document_id);
      const rows: Array<[number, { doc: DocumentRow; bytes?: Buffer }]> = [];
      try {
        const archived = await findArchivedMany(
          tx,
          engine.archiveDir,
          fresh.map((item) => ({ hash: item.hash, sourcePath: item.path, size: item.file_size })),
          { bytesUpTo: CLAIMED_BYTES },
        );
        const versions = fresh.flatMap((item, i) => {
          const file = archived[i];
          return file ? [{ file: { ...file, sourcePath: item.path }, itemId: item.id }] : [];
        });
        const docs = await createDocumentVersions(tx, versions, worker);
        docs.forEach((doc, i) => {
          if (!(doc instanceof Error))
            rows.push([versions[i]!.itemId, { doc, bytes: versions[i]!.file.bytes }]);
        });
      } catch (error) {
        // a deadlock or a lost connection ends the whole transaction (MariaDB rolls it back), the claim with it:
        // the claim is tried again, instead of going on with items this worker no longer holds
        if (isRetryable(error)) throw error;
        /* anything else: processItem tries again and reports it for each item alone */
      }
      return { items, rows };
    });
    for (const [itemId, row] of rows) prepared.set(itemId, row);
    const taken = items.flatMap((item) => (item.takenFrom ? [item.takenFrom] : []));
    if (taken.length > 0) {
      const closed = await runLog.closeRunsOfWorkers(taken).catch(() => [] as number[]); // ki_dev down: later
      if (closed.length > 0)
        runLogger.warn(
          `run(s) ${closed.join(', ')} marked failed: their worker ended without finishing them`,
        );
    }
    return items;
  };

  /** the document each item in flight works on (a new file's is made while it is processed), by queue item id */
  const documentOf = new Map<number, number>();
  /**
   * Items this process is closing (done, failed, deferred, handed back) or has closed, until they leave `active`: no
   * longer held in the queue once closed, they are not lost leases to the heartbeat, nor leases to fence. The
   * completion of a document, say, commits before its item settles (the replaced versions are retracted in between).
   */
  const closingItems = new Set<number>();
  /** items this run deferred (deletions waiting for a version of their file in flight), by id, with their path */
  const deferred = new Map<number, string>();
  /**
   * Ends the waits of the deferred items, when the run has nothing else to do (or stops): each is pending again.
   * True when one of them need not wait any longer (no version of its file is in flight now) and the run may claim
   * it; the others wait for the worker processing their file, then the next run or worker takes them.
   */
  const undeferItems = async (mayClaim: boolean): Promise<boolean> => {
    let ready = false;
    for (const [id, file] of [...deferred]) {
      deferred.delete(id);
      const waits = await fileInFlight(db, file, id);
      if ((await undeferQueueItem(db, id)) && !waits) ready = true;
    }
    return ready && mayClaim;
  };

  /**
   * A version made by another process (a queue item taken over from it, one `cpe reprocess` queued) whose archive
   * file is not in this data folder: bytes archived in SQL are every process's, but a larger file is archived in the
   * data folder of the process that archived it. Copied again from the source file while that still holds the
   * version's content (the steps read the archive, and named the source "not found"); else why it cannot be processed
   * here.
   */
  const archiveAgain = async (doc: DocumentRow, archiveAt: string): Promise<string | undefined> => {
    const cannot = `version ${doc.version} of ${doc.source_path} cannot be processed here: its archived copy ${archiveAt} is not in this data folder's archive (another process, with another data folder, archived it)`;
    try {
      const copied = await storeInArchive(db, engine.archiveDir, doc.source_path);
      if (copied.hash === doc.content_hash) return undefined;
      return `${cannot}, and the source file has changed since (the next scan queues its new content)`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        return `${cannot}, and the source file is gone (the next scan deletes it)`;
      throw error;
    }
  };

  /** One queue item through the document DAG. `releaseSlot` frees its concurrency slot before the commit. */
  const processItem = async (
    item: QueueItem,
    itemSignal: AbortSignal,
    releaseSlot: () => void,
  ): Promise<'done' | 'failed' | 'released' | 'skipped' | 'taken-over'> => {
    // the scope is read when a line is written: a new file's document id goes in once its version exists
    const scope = { runId, documentId: item.document_id };
    const log = runLog.logger(scope);
    /** said before each statement that closes the item (see closingItems) */
    const closing = () => closingItems.add(item.id);
    /** The item failed for good (no attempt would do better): the queue, its document, the log and the summary. */
    const failForGood = async (reason: string, documentId: number | null, line: string) => {
      closing();
      await failQueueItem(db, item, worker, reason, false);
      if (documentId) await setDocumentStatus(db, documentId, 'failed', reason);
      log.error(line, { path: item.path });
      recordFailure(item.id, { path: item.path, documentId, error: reason });
      return 'failed' as const;
    };
    // taken before anything is awaited: a claim that takes this item back meanwhile (its lease lost) drops the rows
    // it made for it (see claimAhead)
    const claimed = prepared.get(item.id);
    let doc: DocumentRow | undefined = claimed?.doc;
    /** the bytes held in SQL, when this item got them already (with its claim, its lookup or its archiving) */
    let bytes = claimed?.bytes;
    prepared.delete(item.id);
    if (itemSignal.aborted) {
      // claimed ahead, and the run was cancelled (or the lease lost) before it started
      return (await releaseQueueItem(db, item.id, worker, false)) ? 'released' : 'taken-over';
    }
    // an item whose every attempt ended with its process (a document that crashes or exhausts the worker: a
    // native parser crash, the memory limit) would crash-loop every worker in turn: given up instead. Its attempts
    // are the starts of its processing that were not closed (a claim counts none: see startQueueItem).
    if (item.attempts >= item.max_attempts) {
      const reason = `given up: the process working on it ended ${item.attempts} times before it was done (crashed or killed)`;
      return failForGood(reason, item.document_id, `${item.path}: ${reason}`);
    }
    /**
     * Counts this attempt (startQueueItem), before anything of it that could end the process runs (its steps, the
     * reading of its file); false when another process holds the item now.
     */
    const countAttempt = async () => {
      if (!(await startQueueItem(db, item.id, worker))) return false;
      item.attempts++;
      return true;
    };
    if (item.action === 'delete') {
      if (!(await countAttempt())) return 'taken-over';
      // a deletion runs no steps: a lease lost now stops nothing (its completion says whether it held the item)
      closing();
      // the file came back after the scan decided it was gone: nothing to delete (the next scan sees it). Whatever
      // its extension: one the detect step no longer lists is out of scope, not gone (the scan decides alike, with
      // the same listableFile: goneFromSource), and its documents stay.
      // checked against the run's folder when the item is from it (items other scans queued are checked alone)
      const fromSource =
        options.sourceDir !== undefined && item.path.startsWith(`${options.sourceDir}${path.sep}`);
      if (listableFile(item.path, fromSource ? options.sourceDir : undefined)) {
        await completeQueueItem(db, item.id, worker, 'the file is there again: not deleted');
        log.info(`not deleted: ${item.path} is there again`);
        return 'skipped';
      }
      // a version of the file being processed now (the file changed, then went): its worker finishes first, and
      // the deletion comes after (marked deleted under it, its steps would fail on the rows taken away)
      if (await fileInFlight(db, item.path, item.id)) {
        await deferQueueItem(
          db,
          item.id,
          worker,
          DELETE_WAIT_MS,
          'waiting: a version of the file is being processed',
        );
        deferred.set(item.id, item.path);
        log.info(`deletion of ${item.path} waits: a version of it is being processed`);
        return 'released';
      }
      // Every version of the file goes, and nothing queued before may make another: a version made after the scan
      // from content queued before the deletion (the file changed, then went) is of the file that went, and a
      // pending item's version would be the current document of a file that is not there. So are the file's
      // failures over; in one transaction, before the retraction, which may fail and be tried again.
      const ids = await db.transaction(async (tx) => {
        const marked = await markPathDeleted(tx, item.path);
        await closeItemsOfGoneFile(
          tx,
          item.path,
          `superseded: ${item.path} was deleted before it was processed`,
        );
        await retireFailures(tx, [
          {
            path: item.path,
            upToDocumentId: null,
            before: sqlTime(),
            reason: `superseded: ${item.path} was deleted`,
          },
        ]);
        return marked;
      });
      // and the versions an earlier attempt marked deleted but could not retract (the vector index was down)
      const left = await db.query<{ id: number }>(
        `SELECT d.id FROM documents d WHERE d.source_path = ? AND d.status = 'deleted' AND ${HAS_DERIVED_ROWS}`,
        [item.path],
      );
      for (const id of new Set([...ids, ...left.map((r) => Number(r.id))])) await engine.retract(id);
      await completeQueueItem(db, item.id, worker);
      log.info(`deleted ${item.path}: ${ids.length} version(s) retracted`, { documentIds: ids });
      return 'done';
    }

    if (!doc && item.document_id) {
      doc = await getDocument(db, item.document_id);
      const superseded = doc && (await supersededReason(db, doc));
      if (doc && superseded) {
        // a version left waiting (pending: its retry was due; processing: a run died with it) is not done and
        // will not be: failed, with the reason
        if (doc.status === 'pending' || doc.status === 'processing')
          await setDocumentStatus(db, doc.id, 'failed', `${superseded}; not processed`);
        // what an earlier attempt left of it (a version in flight is not retracted when a newer one completes);
        // never the version searched now
        if (Number(doc.is_latest) !== 1) await engine.retract(doc.id);
        closing();
        await completeQueueItem(db, item.id, worker, `${superseded}; not processed`);
        log.info(`${superseded}; not processed`);
        return 'skipped';
      }
    }
    if (!doc) {
      if (!(await countAttempt())) return 'taken-over';
      // the scan archived the bytes it hashed (unless the file is large or another machine scanned it)
      let archived: ArchivedFile | undefined = await findArchived(
        db,
        engine.archiveDir,
        item.hash,
        item.path,
        item.file_size,
        { bytesUpTo: INLINE_ARCHIVE_BYTES },
      );
      try {
        archived ??= await storeInArchive(db, engine.archiveDir, item.path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
          closing();
          await completeQueueItem(db, item.id, worker, 'source file vanished before it was processed');
          return 'skipped';
        }
        throw error;
      }
      if (archived.hash !== item.hash) {
        closing();
        await completeQueueItem(
          db,
          item.id,
          worker,
          `file changed since the scan (now ${archived.hash.slice(0, 12)}); the next scan queues it`,
        );
        return 'skipped';
      }
      try {
        doc = await createDocumentVersion(
          db,
          { ...archived, sourcePath: item.path },
          { itemId: item.id, worker },
        );
      } catch (error) {
        if (!(error instanceof ContentAlreadyVersioned)) throw error;
        // one content of a file is one version: this item's content has its version already
        closing();
        await completeQueueItem(db, item.id, worker, `${error.message}; no other version made`);
        log.info(`${error.message}; no other version made`);
        return 'skipped';
      }
      bytes = archived.bytes;
    } else if (doc.status !== 'processing') {
      // the attempt counts with the document's status: one commit, not two
      const id = doc.id;
      const held = await db.transaction(async (tx) => {
        if (!(await startQueueItem(tx, item.id, worker))) return false;
        await setDocumentStatus(tx, id, 'processing');
        return true;
      });
      if (!held) return 'taken-over';
      item.attempts++;
    } else if (!(await countAttempt())) return 'taken-over';
    scope.documentId = doc.id;
    documentOf.set(item.id, doc.id);
    // bytes archived in SQL (got above, or read now): the steps take them from memory, and a step that asks for a
    // file path gets the file written from them then
    const archivedBytes = bytes ?? (await readInlineArchive(db, doc.content_hash));
    const archiveAt = engine.archivePathFor(doc.content_hash, doc.source_path);
    if (archivedBytes === undefined && !existsSync(archiveAt)) {
      const missing = await archiveAgain(doc, archiveAt);
      if (missing) return failForGood(missing, doc.id, missing);
    }
    const archivePath = archiveFile(archiveAt, archivedBytes);
    const ref: DocumentRef = {
      id: doc.id,
      sourcePath: doc.source_path,
      filename: doc.filename,
      contentHash: doc.content_hash,
      version: doc.version,
      fileSize: doc.file_size,
      previousVersionId: doc.previous_version_id,
      queueId: item.id,
      action: item.action,
      get archivePath() {
        return archivePath();
      },
      archivedBytes,
    };
    // a new version has no checkpoints; a document processed before may have some, of this pipeline and others
    const stored = item.document_id
      ? await loadCheckpoints(db, doc.id, plan.pipeline.id, planned)
      : undefined;
    // forced by this run, or by whoever queued the item (`cpe reprocess`, `cpe run --force` with a worker claiming)
    const checkpoints = options.force || item.forced || !stored ? new Map<string, string>() : stored.done;
    // a document's data is one set whichever pipeline or step wrote it: what runs here makes other pipelines'
    // checkpoints of the same data stale, and this pipeline's ones of steps since disabled or renamed (which would
    // otherwise look current when they come back)
    const supersedes =
      stored && (stored.othersHave || stored.unplanned.length > 0) ? supersededTypes() : undefined;
    // Checkpoints of quick steps are written with the document's completion (one statement); a step that took
    // longer than a second is checkpointed at once, so a crash does not make a resumed run repeat it.
    const pendingCheckpoints: CheckpointRow[] = [];
    const memo = new Map<string, unknown>();
    const state = new Map<string, 'ok' | 'skipped' | 'failed'>();
    let firstFailure: StepError | undefined;
    const running = new Map<string, Promise<void>>();

    const skippedHash = (step: PlannedStep) =>
      skippedCheckpointHash(step.lineageHash, String(engine.settings.profileKey));
    const toRun = stepsToRun(documentSteps, checkpoints, profileKeysOf(engine.settings));
    const runDocStep = async (step: PlannedStep) => {
      const began = Date.now();
      if (!toRun.has(step.name)) {
        state.set(step.name, checkpoints.get(step.name) === step.lineageHash ? 'ok' : 'skipped');
        return;
      }
      const outcome = await executeStep(
        step,
        (counts, signal) => ({ ...baseContext(step, ref.id, counts, signal), document: ref, memo }),
        itemSignal,
        ref.id,
        item.id,
      );
      state.set(step.name, outcome.status);
      if (outcome.status === 'failed') {
        firstFailure ??= outcome.error;
        return;
      }
      const checkpointRow: CheckpointRow = {
        documentId: ref.id,
        pipelineId: plan.pipeline.id,
        stepName: step.name,
        stepType: step.type,
        hash: outcome.status === 'ok' ? step.lineageHash : skippedHash(step),
        runId,
        ...(supersedes && stored && supersededBy(supersedes.get(step.name)!, stored)),
      };
      if (Date.now() - began > 1000) await saveCheckpoints(db, [checkpointRow]);
      else pendingCheckpoints.push(checkpointRow);
    };

    // DAG scheduling: start every step whose dependencies are finished; stop starting after a failure.
    await new Promise<void>((resolve) => {
      const tryStart = () => {
        for (const step of documentSteps) {
          if (state.has(step.name) || running.has(step.name)) continue;
          if (firstFailure || itemSignal.aborted) continue;
          const deps = step.dependsOn.filter((d) => plan.byName.get(d)?.phase === 'document');
          if (!deps.every((d) => state.get(d) === 'ok' || state.get(d) === 'skipped')) continue;
          const promise = runDocStep(step)
            .catch((error) => {
              firstFailure ??= StepError.wrap(step.name, ref.id, 1, error);
              state.set(step.name, 'failed');
            })
            .finally(() => {
              running.delete(step.name);
              tryStart();
              if (running.size === 0) resolve();
            });
          running.set(step.name, promise);
        }
        if (running.size === 0) resolve();
      };
      tryStart();
    });

    // the steps are over: what follows closes the item
    closing();
    // A lease the fence gave up on after every step had run (one held the event loop past the lease, say) may still be
    // this worker's: the completion says so (it commits only for the lease's holder), rather than the item going
    // back to the queue to run its steps again, and again for as long as they take longer than the lease.
    const stepsAllRan =
      !firstFailure &&
      documentSteps.every((s) => state.get(s.name) === 'ok' || state.get(s.name) === 'skipped');
    const leaseLost = (itemSignal.reason as { code?: unknown } | undefined)?.code === ErrorCodes.LEASE_LOST;
    if (itemSignal.aborted && !(leaseLost && stepsAllRan)) {
      // cancelled run or lost lease: whatever failed failed because of the abort. Give the item back untouched
      // (a lost lease means another worker owns it now; releaseQueueItem only touches items we still hold).
      return (await releaseQueueItem(db, item.id, worker, true)) ? 'released' : 'taken-over';
    }
    if (firstFailure) {
      const error = firstFailure;
      const now = Date.now();
      for (const step of documentSteps) {
        if (state.has(step.name)) continue;
        runLog.recordStep({
          runId,
          documentId: ref.id,
          queueId: item.id,
          stepName: step.name,
          stepType: step.type,
          status: 'skipped',
          reason: `not run: step '${error.step}' failed`,
          attempt: 1,
          startedAt: now,
          finishedAt: now,
        });
        // the events say what the summary counts
        emit({
          type: 'step-finished',
          step: step.name,
          stepType: step.type,
          documentId: ref.id,
          status: 'skipped',
          ms: 0,
          reason: `not run: step '${error.step}' failed`,
          counts: {},
        });
        totals.stepsSkipped++;
      }
      const message = describeError(error);
      await saveCheckpoints(db, pendingCheckpoints); // what did finish need not run again
      const status = await failQueueItem(db, item, worker, message, error.retryable);
      // a document whose queue item comes back by itself (retryable, attempts left) is pending, not failed
      const retried = status === 'failed' && error.retryable;
      await setDocumentStatus(db, ref.id, retried ? 'pending' : 'failed', message);
      if (error.retryable) backpressure.failed();
      runLog
        .logger({ ...scope, stepName: error.step })
        .error(`document failed (queue item ${status}): ${message}`, {
          path: item.path,
          code: error.causeCode,
        });
      recordFailure(item.id, { path: item.path, documentId: ref.id, error: message });
      return 'failed';
    }

    // finalize (when in the plan) completed the document itself; the engine closes the queue item either way
    const finalized = documentSteps.some((s) => s.type === 'finalize' && state.get(s.name) === 'ok');
    // the document's work is done: its slot goes to the next item while the completion waits for a group commit
    releaseSlot();
    const closed = await completions.finish(ref.id, {
      queue: { itemId: item.id, worker },
      checkpoints: pendingCheckpoints,
      completeDocument: !finalized,
    });
    if (!closed) {
      log.warn(
        `lease on queue item ${item.id} was lost before completion; another worker finishes ${item.path}`,
      );
      return 'taken-over';
    }
    // the spread reads archivePath: a file is written now for bytes held in SQL
    if (keepProcessed) processed.push({ ...ref, archivedBytes: undefined });
    return 'done';
  };

  let docsRequeued = 0;
  // retries of LLM requests inside a step (a failing or hung server) go into this run's log as they happen
  const stopRetryNotices = onLlmRetry((notice) => runLogger.warn(describeRetry(notice)));
  try {
    await runRunSteps('pre');
    if (options.runPreSteps !== false && options.sourceDir) {
      docsRequeued = await engine.requeueStale(plan, options.sourceDir, options.force ?? false);
      // the files its scan could not read are this run's failures too (detect recorded them in the queue)
      if (plan.hasStepType('detect')) {
        for (const file of await unreadableFiles(db, options.sourceDir)) {
          seenItems.add(file.id);
          totals.docsTotal++;
          totals.docsFailed++;
          unreadableCount++;
          failures.push({ path: file.path, documentId: null, error: file.error });
        }
      }
      // files given up in earlier runs are processed by none (the scan queues a file again only when it changes)
      const givenUp = await countGivenUpFiles(db, pathsUnder(db.dialect, 'path', options.sourceDir));
      if (givenUp.dead > 0)
        runLogger.warn(
          `${givenUp.dead} file(s) of this folder were given up after their attempts ran out and are not processed again until they change: \`cpe status\` names them, \`cpe retry\` queues them again`,
        );
      // failures no attempt would mend (a corrupt file; a step's config, which may have been mended since)
      if (givenUp.failed > 0)
        runLogger.warn(
          `${givenUp.failed} file(s) of this folder failed in earlier runs for a reason no retry mends (a corrupt file, a step's config) and are not processed again until they change: \`cpe status\` names them, \`cpe retry\` queues them again`,
        );
    }
    for (const gone of await releaseLeasesOfGoneProcesses(db, os.hostname()))
      runLogger.warn(
        `took over ${gone.items} queue item(s) that process ${gone.pid} (worker ${gone.worker}) held when it ended without finishing them`,
      );
    const deadRuns = await runLog.closeRunsOfGoneProcesses();
    if (deadRuns.length)
      runLogger.warn(
        `run(s) ${deadRuns.join(', ')} marked failed: their process ended without finishing them`,
      );
    const leftovers = await retractLeftovers(
      db,
      (id) => engine.retract(id),
      (message) => runLogger.warn(message),
    );
    if (leftovers.length)
      runLogger.info(`retracted ${leftovers.length} replaced version(s) an earlier run could not retract`, {
        documentIds: leftovers,
      });

    // The document phase: keep `concurrency` items in flight and one to two claims' worth more claimed ahead (one
    // claim, with the items' document rows, for several items: bench/engine.ts measured 4 ahead at ~11% overhead,
    // 16 at ~9%); heartbeat the leases of all of them. A claim grows while items go faster than claims come back:
    // on MariaDB a claim is a transaction of several round trips (~10 ms with 16 items on a local server, longer
    // than 16 no-op documents take), so there 1,000 no-op documents took 0.82-0.91 s with claims of 16 and
    // 0.62-0.65 s with claims of 64. It shrinks again when a claim came back in time, so that a worker does not
    // hold many slow items that other workers could take.
    const active = new Map<
      number,
      { item: QueueItem; controller: AbortController; promise?: Promise<void>; heldUntil: number }
    >();
    const baseClaim = Math.min(32, Math.max(16, options.concurrency));
    let claimSize = baseClaim;
    /** a slot sat idle for want of a claimed item while a claim was out */
    let starved = false;
    const waiting: number[] = []; // claimed, not started, oldest first
    let running = 0; // items holding a slot
    /**
     * The item running alone (see runsAlone): nothing else starts until it has ended, its completion committed (a
     * crash caused by the next item must not lose it, and charge it again)
     */
    let alone: number | undefined;
    const beat = setInterval(
      () => {
        const ids = [...active.keys()];
        const sentAt = Date.now();
        heartbeat(db, worker, ids, leaseMs)
          .then((lost) => {
            // the lease now runs until sentAt + lease (heartbeat computed locked_until before it was sent)
            for (const id of ids) {
              const entry = active.get(id);
              if (entry && !lost.includes(id)) entry.heldUntil = Math.max(entry.heldUntil, sentAt + leaseMs);
            }
            for (const id of lost) {
              const entry = active.get(id);
              // closed by this process since the beat was sent: not lost
              if (!entry || closingItems.has(id)) continue;
              runLog
                .logger({ runId })
                .warn(`lease lost on queue item ${id} (${entry.item.path}); stopping work on it`);
              entry.controller.abort(new CpeError(ErrorCodes.LEASE_LOST, 'lease lost'));
            }
          })
          .catch((error) => runLogger.warn(`heartbeat failed: ${describeError(error, 300)}`));
      },
      Math.max(1000, leaseMs / 3),
    );
    beat.unref();
    // Fencing: when heartbeats cannot renew a lease (database unreachable from here, a stalled process), stop work
    // on the item shortly before the lease runs out, as far as this process knows: another worker may take it then.
    const fenceMarginMs = Math.min(2000, leaseMs / 4);
    const fence = setInterval(() => {
      for (const [id, entry] of active) {
        if (
          entry.controller.signal.aborted ||
          closingItems.has(id) ||
          Date.now() < entry.heldUntil - fenceMarginMs
        )
          continue;
        runLogger.warn(
          `lease on queue item ${id} (${entry.item.path}) could not be renewed; stopping work on it`,
        );
        entry.controller.abort(new CpeError(ErrorCodes.LEASE_LOST, 'lease could not be renewed in time'));
      }
    }, 1000);
    fence.unref();
    // cancelling the run aborts every item in flight (one listener, not one per item)
    const abortActive = () => {
      for (const entry of active.values()) entry.controller.abort(runController.signal.reason);
    };
    runController.signal.addEventListener('abort', abortActive, { once: true });
    let claimed = 0;
    /** items finished in this run, and how long one took (a moving average, ms) */
    let finishedItems = 0;
    let itemMs = 0;
    // a pipeline without document steps (only run steps: detect, index_optimize, ...) has nothing to do with a
    // queued file: its items are left to a pipeline that processes documents, not marked done with nothing stored
    const limit = documentSteps.length === 0 ? 0 : (options.limit ?? Number.POSITIVE_INFINITY);
    if (documentSteps.length === 0 && options.sourceDir)
      runLogger.info(
        'no document steps in this pipeline: queued files are left for a pipeline that processes documents',
      );
    let wake: (() => void) | undefined;
    let claimFailures = 0;
    /** items this run started (an item claimed ahead and handed back unstarted is not one of its documents) */
    const started = new Set<number>();
    const startItem = (id: number) => {
      const entry = active.get(id);
      if (!entry) return;
      const { item, controller } = entry;
      started.add(id);
      running++;
      let holdsSlot = true;
      const releaseSlot = () => {
        if (!holdsSlot) return;
        holdsSlot = false;
        running--;
        // its completion waits for company no longer: the items after it wait for its commit
        if (alone === id) void completions.flush();
        wake?.();
      };
      emit({ type: 'document-started', item });
      const began = Date.now();
      entry.promise = processItem(item, controller.signal, releaseSlot)
        .then(
          (status) => {
            itemMs = finishedItems++ === 0 ? Date.now() - began : 0.8 * itemMs + 0.2 * (Date.now() - began);
            // a failure recorded in processItem is this attempt's own: only an earlier attempt's is forgotten
            if (status !== 'failed') forgetEarlierFailure(item.id);
            // (an item this run claims back and ends itself is no longer another's)
            if (status === 'taken-over')
              takenOver.set(item.id, {
                path: item.path,
                documentId: documentOf.get(item.id) ?? item.document_id,
              });
            else if (status !== 'released') takenOver.delete(item.id);
            if (status === 'done') {
              totals.docsDone++;
              backpressure.succeeded();
            } else if (status === 'failed') totals.docsFailed++;
            else if (status === 'skipped') totals.docsSkipped++;
            // the document id a new file got while it was processed, and what failed
            const failure = status === 'failed' ? failedInRun.get(item.id) : undefined;
            emit({
              type: 'document-finished',
              item,
              documentId: documentOf.get(item.id) ?? item.document_id,
              status: status === 'taken-over' ? 'released' : status,
              ...(failure && { error: failure.error }),
            });
            documentOf.delete(item.id);
          },
          async (error) => {
            // an engine-level problem with this item (database, archive): the item fails, the run goes on
            const message = describeError(error);
            recordFailure(item.id, { path: item.path, documentId: item.document_id, error: message });
            totals.docsFailed++;
            runLogger.error(`queue item ${item.id} (${item.path}) failed: ${message}`);
            if (isRetryable(error)) backpressure.failed();
            closingItems.add(item.id);
            await failQueueItem(db, item, worker, message, true).catch(() => undefined);
            emit({
              type: 'document-finished',
              item,
              documentId: item.document_id,
              status: 'failed',
              error: message,
            });
          },
        )
        .finally(() => {
          releaseSlot();
          // (a claim never hands this run an item it still works on: see claimAhead)
          if (active.get(item.id) === entry) active.delete(item.id);
          closingItems.delete(item.id);
          if (alone === id) alone = undefined;
          wake?.();
        });
    };
    /**
     * One claim at a time, beside the items in flight: it starts while a claim's worth of items still waits, so
     * that on MariaDB (a claim is a transaction of several round trips) the slots are not idle until it returns.
     * Its items join `waiting` once the document steps are set up; it wakes the loop when it ends.
     */
    let claiming: Promise<void> | undefined;
    /** false after a claim found nothing: the loop waits for a slot or a moment before it looks again */
    let look = true;
    /** what ends the document phase early: a claim failure that is not retryable, or a failing setup */
    let fatal: { error: unknown } | undefined;
    // the loop ends when the run is cancelled or drained (a drain lets the items in flight finish, below)
    const stopClaiming = options.drain
      ? AbortSignal.any([runController.signal, options.drain])
      : runController.signal;
    const claimAhead = async (want: number, fast: boolean) => {
      const claimedAt = Date.now();
      let items: QueueItem[];
      try {
        items = await claimBatch(want);
        claimFailures = 0;
      } catch (error) {
        // a claim that fails for a retryable reason (database restarting, deadlock) does not end the run or the
        // worker: back off (capped) and claim again; `cpe run` gives up after a few minutes, `cpe worker` never
        claimFailures++;
        if (!isRetryable(error) || (!options.keepPolling && claimFailures > 10)) {
          fatal = { error };
          return;
        }
        const delay = backoffMs(claimFailures, 500, 15_000);
        if (claimFailures === 1 || claimFailures % 10 === 0) {
          process.stderr.write(
            `cpe: claiming queue items failed (${claimFailures}x), trying again in ${delay} ms: ${describeError(error, 300)}\n`,
          );
        }
        // a stop (Ctrl-C, SIGTERM) ends the wait: a database that is down does not hold the worker's exit
        await abortableSleep(delay, stopClaiming).catch(() => undefined);
        return;
      }
      // An item whose earlier attempt in this run is still ending (another process took it over, and that process's
      // lease ran out in turn) goes back to the queue: its entry stands for that attempt until it settles, and
      // replaced, the attempt's end dropped the new one, which then ran on unwatched (no heartbeat, not awaited: the
      // run ended and closed the database under it, leaving the item `processing`).
      const busy = new Set(items.filter((item) => active.has(item.id)).map((item) => item.id));
      if (busy.size > 0) {
        items = items.filter((item) => !busy.has(item.id));
        // the rows this claim made for them, not those of an earlier claim that an attempt claimed ahead still waits
        // with (without them it made its version again, found it made, and closed the item unprocessed)
        for (const id of busy) if (!waiting.includes(id)) prepared.delete(id);
        await Promise.allSettled([...busy].map((id) => releaseQueueItem(db, id, worker, false)));
      }
      look = items.length > 0;
      // slots that ran dry while a full claim was out: claims are too small for how fast items go (a short claim
      // means the queue ran dry instead)
      // (only claims made two claims ahead say so: a slot's worth ahead is small on purpose)
      const tooSmall = starved && items.length === want;
      if (fast)
        claimSize = tooSmall ? Math.min(8 * baseClaim, 2 * claimSize) : Math.max(baseClaim, claimSize / 2);
      starved = false;
      for (const item of items) {
        deferred.delete(item.id);
        claimed++;
        if (!seenItems.has(item.id)) totals.docsTotal++;
        seenItems.add(item.id);
        active.set(item.id, { item, controller: new AbortController(), heldUntil: claimedAt + leaseMs });
      }
      if (items.length === 0) return;
      try {
        await setUpDocumentSteps();
      } catch (error) {
        fatal = { error };
      }
      // after a failed setup they wait only to be handed back below
      for (const item of items) waiting.push(item.id);
    };
    try {
      while (!stopClaiming.aborted && !fatal) {
        while (running < options.concurrency && waiting.length > 0 && alone === undefined) {
          const next = active.get(waiting[0]!)?.item;
          // (one whose attempts are used up is given up at its start: it runs nothing)
          if (next && runsAlone(next) && next.attempts < next.max_attempts) {
            // it may be what ended the process it is taken over from: alone, once every item started before it has
            // ended, its completion committed (a crash it causes again must not lose theirs, and charge them again)
            if (active.size > waiting.length) {
              void completions.flush();
              break;
            }
            alone = next.id;
            runLogger.info(
              `${next.path}: taken over from ${next.takenFrom}, which ended while working on it; processed alone, so that a crash it causes again charges no other document`,
            );
          }
          startItem(waiting.shift()!);
        }
        const queued = running + waiting.length;
        // Claim while a claim's worth still waits: enough for the free slots and up to two claims ahead, while items
        // go quickly (the queue's round trips would leave slots idle). Until one has finished, or while they take
        // long, only as many ahead as there are slots: a worker does not hold work that other workers could do.
        const fast = finishedItems > 0 && itemMs < FAST_ITEM_MS;
        const ahead = fast ? 2 * claimSize : options.concurrency;
        const want = Math.min(options.concurrency + ahead - queued, limit - claimed);
        if (
          look &&
          !claiming &&
          queued <= options.concurrency + (fast ? claimSize : 0) &&
          want > 0 &&
          Date.now() >= backpressure.pausedUntil
        ) {
          claiming = claimAhead(want, fast).finally(() => {
            claiming = undefined;
            wake?.();
          });
        }
        if (!claiming) {
          // nothing to start: commit the completions that wait for company
          if (waiting.length === 0) void completions.flush();
          if (active.size === 0) {
            if (backpressure.pausedUntil > Date.now() && claimed < limit) {
              await abortableSleep(backpressure.pausedUntil - Date.now(), stopClaiming).catch(
                () => undefined,
              );
              look = true;
              continue;
            }
            if (!options.keepPolling || claimed >= limit) {
              // deletions that waited for a version this run processed: done now, before the run ends
              if (deferred.size > 0 && (await undeferItems(claimed < limit))) {
                look = true;
                continue;
              }
              break;
            }
            await abortableSleep(1000, stopClaiming).catch(() => undefined);
            look = true;
            continue;
          }
        }
        // wait for a slot to free up or the claim to end (or poll again shortly when slots are free but the
        // queue was empty)
        const pollSoon = !look && running + waiting.length < options.concurrency && claimed < limit;
        const claimOut = claiming !== undefined;
        if (claimOut && claimed > 0 && waiting.length === 0 && running < options.concurrency) starved = true;
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            stopClaiming.removeEventListener('abort', done);
            resolve();
          };
          wake = done;
          const timer = pollSoon ? setTimeout(done, 500) : undefined;
          // while items run, what they wait for keeps the process alive (sockets, threads, timers); the poll must
          // not: an item whose step waits on a promise nothing can settle would otherwise hold the run for ever,
          // where the command line gives such a call up once nothing else is left (cli/main.ts whenStalled)
          if (running > 0) timer?.unref();
          stopClaiming.addEventListener('abort', done, { once: true });
        });
        wake = undefined;
        // a slot or a moment later the queue may hold items again (a claim that ended says so itself)
        if (!claimOut) look = true;
      }
      // a claim still out adds its items to `waiting` first
      await claiming;
      // items claimed ahead that a cancelled run never started go back to the queue untouched, and are not the
      // run's documents (a run stopped at 4 of 8 said "4 done, 0 failed of 8": 4 of them it had only claimed)
      await Promise.allSettled(
        waiting.splice(0).map((id) => {
          if (!started.has(id) && seenItems.delete(id)) totals.docsTotal--;
          active.delete(id);
          prepared.delete(id);
          return releaseQueueItem(db, id, worker, false);
        }),
      );
      await completions.flush();
      await Promise.allSettled([...active.values()].map((a) => a.promise));
      await completions.flush();
      // a cancelled or drained run leaves the items it deferred pending, not failed
      await undeferItems(false).catch((error) =>
        runLogger.warn(`handing back deferred queue items failed: ${describeError(error, 300)}`),
      );
      if (fatal) throw fatal.error;
    } finally {
      clearInterval(beat);
      clearInterval(fence);
      runController.signal.removeEventListener('abort', abortActive);
    }

    await tearDownDocumentSteps();
    await owePostSteps();
    const idle = documentSteps.length > 0 && totals.docsTotal === unreadableCount;
    if (!stopClaiming.aborted && options.runPostSteps !== false) await runPostSteps(idle);
  } catch (error) {
    runError = error;
    runLogger.error(`run failed: ${describeError(error)}`);
    // documents it processed before it failed are owed their post steps all the same
    await owePostSteps();
    // a run that failed in the document phase still tears down what it set up (a failing teardown is logged)
    await tearDownDocumentSteps().catch((teardownError) =>
      runLogger.warn(`teardown failed: ${describeError(teardownError)}`),
    );
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    stopRetryNotices();
  }
  const status =
    runController.signal.aborted || options.drain?.aborted ? 'cancelled' : runError ? 'failed' : 'ok';
  // a drain that gave its reason (a worker's run ended for an edited pipeline) says why the run was cancelled
  const drainedFor = !runError && status === 'cancelled' ? drainReason(options.drain) : undefined;
  runLogger.info(
    `run ${status}: ${totals.docsDone} done, ${totals.docsFailed} failed${drainedFor ? ` (${drainedFor})` : ''}`,
  );
  await runLog.finishRun(runId, status, totals, startedAt, runError ? describeError(runError) : drainedFor);
  if (runError && status === 'failed') throw runError;
  return {
    runId,
    status,
    durationMs: Date.now() - startedAt,
    failures,
    ...totals,
    docsTakenOver: takenOver.size,
    takenOver: [...takenOver.values()],
    docsRequeued,
  };
}

/**
 * Why a drained run was stopped, when whoever drained it said so: `drain` aborted with a reason of its own (text, or
 * an Error other than the AbortError every plain abort() gives).
 */
export function drainReason(drain: AbortSignal | undefined): string | undefined {
  const reason: unknown = drain?.aborted ? drain.reason : undefined;
  if (typeof reason === 'string') return reason;
  return reason instanceof Error && reason.name !== 'AbortError' ? reason.message : undefined;
}
