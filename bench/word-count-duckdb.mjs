#!/usr/bin/env node
// The DuckDB contender of bench/word-count.bench.ts: the same word count as one SQL statement over the
// same file — lines read in parallel by read_csv (a separator that never occurs, no quoting), split on
// runs of whitespace, counted per word, written as `word<TAB>count` lines.
//   node bench/word-count-duckdb.mjs <input> <output> [threads]
import { DuckDBInstance } from '@duckdb/node-api';

const [input, output, threads = '2'] = process.argv.slice(2);
const quote = (s) => `'${s.replaceAll("'", "''")}'`;
const instance = await DuckDBInstance.create(':memory:', { threads });
const connection = await instance.connect();
await connection.run(`
  COPY (
    SELECT word, count(*) AS n
    FROM (
      SELECT unnest(regexp_split_to_array(line, '\\s+')) AS word
      FROM read_csv(${quote(input)}, columns = {'line': 'VARCHAR'}, delim = chr(31), quote = '', escape = '', header = false, auto_detect = false)
    )
    WHERE word <> ''
    GROUP BY word
  ) TO ${quote(output)} (FORMAT csv, DELIMITER '\t', HEADER false, QUOTE '', ESCAPE '')
`);
connection.closeSync();
instance.closeSync();
