import { expect } from 'chai';
import yargs from 'yargs';
import { checkOptionValues, type OptionTypes } from '../../../src/cli/engine-options.js';

/** Parses `words` as main.ts does, with a command of the option types cpe's commands use; returns its argv. */
async function parse(words: string[]): Promise<Record<string, unknown>> {
  let parsed: Record<string, unknown> = {};
  await yargs(words)
    .command(
      'cmd [query]',
      'a command',
      (y) =>
        y
          .positional('query', { type: 'string' })
          .option('output', { type: 'string', alias: 'o' })
          .option('last', { type: 'number', default: 10 })
          .option('max-tokens', { type: 'number' })
          .option('format', { choices: ['json', 'graphml'] as const, default: 'json' })
          .option('json', { type: 'boolean' })
          .option('tag', { type: 'array' }),
      (argv) => {
        parsed = argv;
      },
    )
    .strict()
    .check((_, options) => checkOptionValues(words, options as unknown as OptionTypes))
    .fail((message, error) => {
      throw error ?? new Error(message);
    })
    .parseAsync();
  return parsed;
}

describe('cli/checkOptionValues', () => {
  it('refuses a value missing, empty, given twice, or a switch given a value, naming the option', async () => {
    for (const [words, message] of [
      [['cmd', '--output'], '--output needs a value'],
      [['cmd', '--output', '--json'], '--output needs a value'],
      [['cmd', '-o'], '-o needs a value'],
      [['cmd', '--output='], '--output is empty: give it a value'],
      [['cmd', '-o', ''], '-o is empty: give it a value'],
      [['cmd', '--last'], '--last needs a value'],
      [['cmd', '--maxTokens'], '--maxTokens needs a value'],
      [['cmd', '--format'], '--format needs a value'],
      [['cmd', '--json=maybe'], "--json is a switch: give it alone (or =true, =false), not 'maybe'"],
      [['cmd', '--last=2', '--last', '3'], '--last is given more than once'],
      [['cmd', '--output=a', '-o', 'b'], '--output is given more than once'],
    ] as const) {
      let error: unknown;
      await parse([...words]).catch((e) => {
        error = e;
      });
      expect((error as Error | undefined)?.message, words.join(' ')).to.equal(message);
    }
  });

  it('takes what is right: values in either form, negative numbers, "-", switches, lists, positionals', async () => {
    expect(await parse(['cmd', '--output', 'a.json', '--last=3', '--json'])).to.include({
      output: 'a.json',
      last: 3,
      json: true,
    });
    expect(await parse(['cmd', '-o', '-', '--last', '-1', '--no-json'])).to.include({
      output: '-',
      last: -1,
      json: false,
    });
    expect(await parse(['cmd', '--json=false', '--max-tokens=5', '--format', 'graphml'])).to.include({
      json: false,
      'max-tokens': 5,
      format: 'graphml',
    });
    expect((await parse(['cmd', '--tag=a', '--tag=b'])).tag).to.deep.equal(['a', 'b']);
    // after `--` nothing is an option; a positional may be empty
    expect(await parse(['cmd', 'frage', '--', '--output'])).to.include({ query: 'frage' });
    expect(await parse(['cmd', ''])).to.include({ query: '' });
  });
});
