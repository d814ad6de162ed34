#!/usr/bin/env node
// Skill package upload and download throughput, and the controller's peak RSS while it
// receives packages. Boots the built controller (`npm run build` first) as a child process
// so its memory is measured apart from this client. It runs as in production: LOG_LEVEL=info
// with its access log, packages stored in s3rver, Redis. No dispatcher: packages are uploaded
// and served by the API alone, no task runs. The baseline is the same bytes PUT straight
// into the same s3rver (and GET back) by the minio client, interleaved: one bare PUT before
// each upload, one bare GET before each download. Any answer but 201 (upload) or 200
// (download), or a hash that differs, fails the run. Median and spread over the uploads.
//
//   BENCH_PACKAGE_MIB=40 BENCH_UPLOADS=5; needs local PostgreSQL and Redis
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, openAsBlob, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ZipArchive } from 'archiver';
import { bootServer, database, emitFigure, freePort, median, premises, productionServices, rssMiB, rssSampler, runBenchScript, secret, spread } from './bench-lib.mjs';

const require = createRequire(import.meta.url);
const MiB = 1024 * 1024;
const packageMiB = Number(process.env.BENCH_PACKAGE_MIB ?? 40);
const uploads = Number(process.env.BENCH_UPLOADS ?? 5);
const work = mkdtempSync(path.join(tmpdir(), 'bench-skills-'));

/** A stored (uncompressed) zip of random bytes, so the package does not shrink. */
async function makePackage(file) {
  const archive = new ZipArchive({ store: true });
  const written = pipeline(archive, createWriteStream(file));
  archive.append('---\nname: bench\ndescription: throughput package\n---\n', { name: 'SKILL.md' });
  archive.append(randomBytes(packageMiB * MiB), { name: 'payload.bin' });
  await archive.finalize();
  await written;
  return { file, hash: createHash('sha256').update(readFileSync(file)).digest('hex') };
}

/** The baseline: the minio client on the same s3rver, a bucket of its own. */
async function bareStore(services) {
  const { Client } = require('minio');
  const endpoint = new URL(services.env.S3_ENDPOINT);
  const client = new Client({ endPoint: endpoint.hostname, port: Number(endpoint.port), useSSL: false, accessKey: services.env.S3_ACCESS_KEY, secretKey: services.env.S3_SECRET_KEY });
  const bucket = `${services.env.S3_BUCKET}-baseline`;
  await client.makeBucket(bucket);
  return {
    put: (key, file) => client.fPutObject(bucket, key, file),
    get: async (key, hash) => {
      const digest = createHash('sha256');
      await pipeline(await client.getObject(bucket, key), digest);
      if (digest.digest('hex') !== hash) throw new Error(`baseline GET ${key}: hash mismatch`);
    },
  };
}

async function timed(action) {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

async function run(base, auth, packages, pid, bare) {
  const created = await fetch(`${base}/`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', category: 'tool' }),
  });
  if (created.status !== 201) throw new Error(`create skill: ${created.status} ${await created.text()}`);
  const idle = rssMiB(pid);
  const uploading = rssSampler(pid);
  const upTimes = [];
  const barePuts = [];
  for (const [index, { file, hash }] of packages.entries()) {
    barePuts.push(await timed(() => bare.put(`package-${index}.zip`, file)));
    const form = new FormData();
    form.append('file', await openAsBlob(file, { type: 'application/zip' }), 'package.zip');
    upTimes.push(await timed(async () => {
      const answer = await fetch(`${base}/bench/upload/`, { method: 'POST', headers: auth, body: form });
      const body = await answer.json();
      if (answer.status !== 201 || body.content_hash !== hash) throw new Error(`upload: ${answer.status} ${JSON.stringify(body)}`);
    }));
  }
  const uploadPeak = uploading.stop();
  const downloading = rssSampler(pid);
  const downTimes = [];
  const bareGets = [];
  for (const [index, { hash }] of packages.entries()) {
    bareGets.push(await timed(() => bare.get(`package-${index}.zip`, hash)));
    downTimes.push(await timed(async () => {
      const answer = await fetch(`${base}/bench/download/?version=${index + 1}`, { headers: auth });
      if (answer.status !== 200) throw new Error(`download ${index + 1}: ${answer.status} ${await answer.text()}`);
      const digest = createHash('sha256');
      await pipeline(Readable.fromWeb(answer.body), digest);
      if (digest.digest('hex') !== hash) throw new Error(`download ${index + 1}: hash mismatch`);
    }));
  }
  return { idle, uploadPeak, downloadPeak: downloading.stop(), upTimes, downTimes, barePuts, bareGets };
}

async function main() {
  const [db, port] = [await database(), await freePort()];
  const token = secret();
  let server;
  let services;
  try {
    if (!db.url) throw new Error('bench-skills needs local PostgreSQL (127.0.0.1:5432, user postgres)');
    services = await productionServices();
    premises(services.statement, 'PostgreSQL (local, a fresh database)', 'consumer: none, packages are uploaded and served by the API alone (no task runs)');
    const packages = [];
    for (let i = 0; i < uploads; i++) packages.push(await makePackage(path.join(work, `package-${i}.zip`)));
    server = await bootServer({
      ...services.env, ROLE: 'controller', NODE_ENV: 'development', DATA_DIR: path.join(work, 'data'), CONTROLLER_PORT: String(port),
      API_TOKEN: token, SECRET_KEY: secret(), DATABASE_URL: db.url, MAX_PACKAGE_BYTES: String((packageMiB + 8) * MiB),
    }, `http://127.0.0.1:${port}/health/`);
    const base = `http://127.0.0.1:${port}/api/v1/skills`;
    const bare = await bareStore(services);
    const { idle, uploadPeak, downloadPeak, upTimes, downTimes, barePuts, bareGets } = await run(base, { authorization: `Token ${token}` }, packages, server.child.pid, bare);
    const size = statSync(packages[0].file).size / MiB;
    const rates = (times) => times.map((ms) => size / (ms / 1000));
    const mibs = (value) => `${value.toFixed(1)} MiB/s`;
    console.log(`skill packages: ${uploads} x ${size.toFixed(1)} MiB, each upload after a bare PUT of the same bytes, each download after a bare GET`);
    console.log(`  upload   ${spread(rates(upTimes), mibs)}; bare PUT to s3rver ${spread(rates(barePuts), mibs)}`);
    console.log(`  download ${spread(rates(downTimes), mibs)}; bare GET from s3rver ${spread(rates(bareGets), mibs)}`);
    const above = (peak) => `${peak.toFixed(0)} MiB (+${(peak - idle).toFixed(0)} MiB)`;
    console.log(`  controller RSS: ${idle.toFixed(0)} MiB idle, peak while receiving ${above(uploadPeak)}, while serving ${above(downloadPeak)}`);
    const pct = (value) => `${(100 * value).toFixed(0)}%`;
    for (const [name, times, bareTimes] of [['upload', upTimes, barePuts], ['download', downTimes, bareGets]]) {
      emitFigure({
        figure: `skill package ${name}, ${size.toFixed(0)} MiB`, value: mibs(median(rates(times))), baseline: `${mibs(median(rates(bareTimes)))} bare s3rver`,
        ratio: pct(median(rates(times)) / median(rates(bareTimes))), target: 'none (shown); every answer and hash right', met: true,
      });
    }
  } finally {
    await server?.stop();
    await services?.stop();
    await db.drop();
    rmSync(work, { recursive: true, force: true });
  }
}

runBenchScript(main);
