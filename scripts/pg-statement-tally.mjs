// Counts the SQL statements a server process sends, by statement text: an `--import` preload
// for the benchmarks (docs/performance.md), e.g.
//   BENCH_SERVER_NODE_ARGS="--import $PWD/scripts/pg-statement-tally.mjs" node scripts/bench-task-cpu.mjs
// Wraps `pg`'s Client.prototype.query when `pg` is first loaded, and writes the tally, most
// frequent first, to PG_TALLY_DIR (default: the temporary directory) as
// pg-tally-<pid>.json every 2 s and at exit: [[statement text (first 200 characters), count,
// columns of its last row description (0 when it returned no rows), rows returned, characters
// of field values returned], ...]. Each row description
// costs `pg` a key per column in a new object (the names interned anew each time), so the widest
// statements run often are the ones worth narrowing.
import { writeFileSync } from 'node:fs';
import Module from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const counts = new Map();
const columns = new Map();
const returned = new Map();
const load = Module._load;
let wrapped = false;
Module._load = function loadAndWrap(request, ...rest) {
  const exported = load.call(this, request, ...rest);
  if (!wrapped && request === 'pg' && exported?.Client) {
    wrapped = true;
    const query = exported.Client.prototype.query;
    exported.Client.prototype.query = function countedQuery(config, ...args) {
      const text = typeof config === 'string' ? config : (config?.text ?? config?.name ?? '?');
      const key = String(text).replace(/\s+/g, ' ').slice(0, 200);
      counts.set(key, (counts.get(key) ?? 0) + 1);
      return query.call(this, config, ...args);
    };
    const row = exported.Client.prototype._handleDataRow;
    exported.Client.prototype._handleDataRow = function countedRow(message) {
      const text = this._activeQuery?.text ?? this._activeQuery?.name;
      if (text) {
        const key = String(text).replace(/\s+/g, ' ').slice(0, 200);
        const sum = returned.get(key) ?? { rows: 0, chars: 0 };
        sum.rows += 1;
        for (const field of message.fields) sum.chars += field?.length ?? 0;
        returned.set(key, sum);
      }
      return row.call(this, message);
    };
    const describe = exported.Client.prototype._handleRowDescription;
    exported.Client.prototype._handleRowDescription = function countedColumns(message) {
      const text = this._activeQuery?.text ?? this._activeQuery?.name;
      if (text) columns.set(String(text).replace(/\s+/g, ' ').slice(0, 200), message.fields.length);
      return describe.call(this, message);
    };
  }
  return exported;
};

const out = path.join(process.env.PG_TALLY_DIR ?? tmpdir(), `pg-tally-${process.pid}.json`);
const write = () => writeFileSync(out, JSON.stringify([...counts].sort((a, b) => b[1] - a[1]).map(([text, count]) => [text, count, columns.get(text) ?? 0, returned.get(text)?.rows ?? 0, returned.get(text)?.chars ?? 0])));
setInterval(write, 2_000).unref();
process.on('exit', write);
