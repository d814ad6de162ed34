#!/usr/bin/env node
// Skill package upload and download throughput, and the controller's peak RSS while it
// receives packages. Boots the built controller (`npm run build` first) as a child process
// so its memory is measured apart from this client.
//
//   node scripts/bench-skills.mjs                    40 MiB packages, folder store
//   BENCH_STORAGE=s3 node scripts/bench-skills.mjs   through an s3rver on loopback
//   BENCH_PACKAGE_MIB=40 BENCH_UPLOADS=5 BENCH_DATABASE_URL=postgres://... (else local
//   PostgreSQL when it answers, else embedded PGlite)
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, openAsBlob, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ZipArchive } from 'archiver';
import { bootServer, database, freePort, median, rssMiB, rssSampler, secret } from './bench-lib.mjs';

const require = createRequire(import.meta.url);
const MiB = 1024 * 1024;
const packageMiB = Number(process.env.BENCH_PACKAGE_MIB ?? 40);
const uploads = Number(process.env.BENCH_UPLOADS ?? 5);
const storage = process.env.BENCH_STORAGE === 's3' ? 's3' : 'folder';
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

async function s3Server() {
  if (storage !== 's3') return { env: {}, stop: async () => {} };
  const S3rver = require('s3rver');
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: path.join(work, 's3') });
  const { port } = await server.run();
  const env = { S3_ENDPOINT: `http://127.0.0.1:${port}`, S3_ACCESS_KEY: 'S3RVER', S3_SECRET_KEY: 'S3RVER', S3_BUCKET: 'bench' };
  return { env, stop: () => server.close() };
}

async function timed(action) {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

async function run(base, auth, packages, pid) {
  const created = await fetch(`${base}/`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', category: 'tool' }),
  });
  if (created.status !== 201) throw new Error(`create skill: ${created.status} ${await created.text()}`);
  const idle = rssMiB(pid);
  const uploading = rssSampler(pid);
  const upTimes = [];
  for (const { file, hash } of packages) {
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
  for (const [index, { hash }] of packages.entries()) {
    downTimes.push(await timed(async () => {
      const answer = await fetch(`${base}/bench/download/?version=${index + 1}`, { headers: auth });
      const digest = createHash('sha256');
      await pipeline(Readable.fromWeb(answer.body), digest);
      if (digest.digest('hex') !== hash) throw new Error(`download ${index + 1}: hash mismatch`);
    }));
  }
  return { idle, uploadPeak, downloadPeak: downloading.stop(), upTimes, downTimes };
}

async function main() {
  const [db, s3, port] = [await database(), await s3Server(), await freePort()];
  const token = secret();
  const env = {
    ROLE: 'controller', NODE_ENV: 'development', DATA_DIR: path.join(work, 'data'), CONTROLLER_PORT: String(port),
    API_TOKEN: token, SECRET_KEY: secret(), DATABASE_URL: db.url, MAX_PACKAGE_BYTES: String((packageMiB + 8) * MiB), ...s3.env,
  };
  let server;
  try {
    const packages = [];
    for (let i = 0; i < uploads; i++) packages.push(await makePackage(path.join(work, `package-${i}.zip`)));
    server = await bootServer(env, `http://127.0.0.1:${port}/health/`);
    const base = `http://127.0.0.1:${port}/api/v1/skills`;
    const { idle, uploadPeak, downloadPeak, upTimes, downTimes } = await run(base, { authorization: `Token ${token}` }, packages, server.child.pid);
    const size = statSync(packages[0].file).size / MiB;
    const rate = (times) => `${(size / (median(times) / 1000)).toFixed(1)} MiB/s (median of ${times.length}, ${median(times).toFixed(0)} ms each)`;
    console.log(`skill packages: ${uploads} x ${size.toFixed(1)} MiB, ${storage} store, ${db.url ? 'PostgreSQL' : 'PGlite'}`);
    console.log(`  upload   ${rate(upTimes)}`);
    console.log(`  download ${rate(downTimes)}`);
    const above = (peak) => `${peak.toFixed(0)} MiB (+${(peak - idle).toFixed(0)} MiB)`;
    console.log(`  controller RSS: ${idle.toFixed(0)} MiB idle, peak while receiving ${above(uploadPeak)}, while serving ${above(downloadPeak)}`);
  } finally {
    await server?.stop();
    await s3.stop();
    await db.drop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
