/** cpe's entry points: the package's bin (`cpe`, bin/cpe.js) and the module it starts (src/cli/bin.ts or .js) */
const OWN_SCRIPT = /(?:^|[\\/])(?:cpe(?:\.js)?|cli[\\/]bin\.[jt]s)$/;

/**
 * The command line that started this process, as ki_dev records it for a run: cpe's own script as `cpe` (npx
 * runs it from a folder in its cache, and a path there says nothing), anything else as it was started.
 */
export function commandLine(argv: readonly string[] = process.argv): string {
  const [, script = '', ...rest] = argv;
  return [OWN_SCRIPT.test(script) ? 'cpe' : script, ...rest].join(' ');
}
