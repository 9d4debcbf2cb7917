import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isEngineError, JobArgs } from '@weft/engine';

function refusedAs(flag: string, pattern: RegExp) {
  return (error: unknown): boolean => {
    assert.ok(isEngineError(error, 'WEFT_ERR_INVALID_JOB'), String(error));
    assert.equal(error.field, flag);
    assert.match(error.message, pattern);
    return true;
  };
}

describe('job arguments', () => {
  it('reads --name value, --name=value, bare flags and positionals', () => {
    const args = new JobArgs(['in.txt', '--input', 'a.txt', '--output=b.tsv', '--verbose', '--top', '5']);
    assert.equal(args.input, 'a.txt');
    assert.equal(args.output, 'b.tsv');
    assert.equal(args.boolean('verbose'), true);
    assert.equal(args.boolean('quiet'), false);
    assert.deepEqual(args.positionals, ['in.txt']);
    assert.equal(args.number('top', 10), 5);
  });

  it('reads an integer within bounds, or the fallback when the flag is absent', () => {
    const args = new JobArgs(['--top', '3', '--lines', '0', '--offset=-7']);
    assert.equal(args.integer('top', 10, 1), 3);
    assert.equal(args.integer('lines', 10, 0), 0);
    assert.equal(args.integer('offset', 0), -7);
    assert.equal(args.integer('absent', 42, 1), 42);
  });

  it('refuses an integer below its minimum, a fraction, a non-number or a missing value, naming the flag', () => {
    assert.throws(() => new JobArgs(['--top', '0']).integer('top', 10, 1), refusedAs('--top', /^job argument --top expected an integer >= 1, got "0"$/));
    assert.throws(() => new JobArgs(['--top', '2.5']).integer('top', 10, 1), refusedAs('--top', /expected an integer >= 1, got "2\.5"/));
    assert.throws(() => new JobArgs(['--lines', 'many']).integer('lines', 10, 0), refusedAs('--lines', /expected an integer >= 0, got "many"/));
    assert.throws(() => new JobArgs(['--n', '1e300']).integer('n', 1), refusedAs('--n', /expected an integer, got "1e300"/));
    assert.throws(() => new JobArgs(['--top']).integer('top', 10, 1), refusedAs('--top', /--top needs a value/));
  });
});
