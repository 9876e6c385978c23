// Entry point for running the CLI from the TypeScript sources (tests: node --import tsx src/cli/bin.ts ...).
import { main } from './main.js';

await main();
