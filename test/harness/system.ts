import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RunningSystem, startSystem } from '../../src/bootstrap';
import { AppConfig, loadConfig, Role } from '../../src/shared/config/config';
import { freshDatabaseUrl } from './database';
import { freePort } from './ports';
import { RoleProcess } from './role-process';
import { testServices } from './services';

export interface TestSystem extends RunningSystem {
  config: AppConfig;
  controllerUrl: string;
  dispatcherUrl: string;
  /** The operator token (`Authorization: Token <apiToken>`). */
  apiToken: string;
  /** The dispatcher's `X-API-Key`. */
  apiKey: string;
  agentKey: string;
  /** Stops the servers and boots them again on the same ports, data and settings. */
  restart(): Promise<void>;
}

export interface TestSystemOptions {
  role?: Role;
  /** Settings over the defaults, as environment variables (`{ MAX_CONCURRENT_TASKS: '5' }`). */
  env?: Record<string, string | undefined>;
  /** 'folder' keeps objects under DATA_DIR; 's3' uses the test S3 server. Default 'folder'. */
  storage?: 'folder' | 's3';
  /** Reuse a database (to boot a second replica or another role on the same data). */
  databaseUrl?: string;
  redis?: boolean;
}

/** Settings for one test system: fresh database, random secrets, free ports, its own DATA_DIR. */
export async function testEnv(options: TestSystemOptions = {}): Promise<Record<string, string | undefined>> {
  const services = testServices();
  const dataDir = fs.mkdtempSync(path.join(process.env.ATC_TEST_WORK_DIR ?? '/tmp', 'data-'));
  const secret = () => randomBytes(24).toString('base64url');
  const [controllerPort, dispatcherPort] = [await freePort(), await freePort()];
  const useRedis = options.redis ?? true;
  const env: Record<string, string | undefined> = {
    ROLE: options.role ?? 'all',
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATA_DIR: dataDir,
    DATABASE_URL: options.databaseUrl ?? (await freshDatabaseUrl()),
    DATABASE_POOL_SIZE: services.databaseKind === 'pglite' ? '1' : '5',
    REDIS_URL: useRedis && services.redisUrl ? services.redisUrl : undefined,
    CACHE_PREFIX: `atc-test:${services.runId}:${randomBytes(4).toString('hex')}:`,
    CONTROLLER_PORT: String(controllerPort),
    DISPATCHER_PORT: String(dispatcherPort),
    API_TOKEN: secret(),
    SECRET_KEY: secret(),
    CALLBACK_SIGNING_KEY: secret(),
    DISPATCHER_API_KEY: secret(),
    API_KEY: secret(),
    AGENT_KEY: secret(),
    HEARTBEAT_INTERVAL_SECONDS: '1',
  };
  if (options.storage === 's3') {
    Object.assign(env, {
      S3_ENDPOINT: services.s3Endpoint,
      S3_ACCESS_KEY: 'S3RVER',
      S3_SECRET_KEY: 'S3RVER',
      S3_BUCKET: `atc-${services.runId}-${randomBytes(3).toString('hex')}`,
    });
  }
  return { ...env, ...(options.env ?? {}) };
}

/** Boots the real system (both roles by default) in this process, on loopback ports. */
export async function startTestSystem(options: TestSystemOptions = {}): Promise<TestSystem> {
  const { config, running: first } = await bootOnFreePorts(options);
  let running = first;
  const system: TestSystem = {
    config,
    controllerUrl: `http://127.0.0.1:${config.controllerPort}`,
    dispatcherUrl: `http://127.0.0.1:${config.dispatcherPort}`,
    apiToken: config.apiToken,
    apiKey: config.apiKey,
    agentKey: config.agentKey,
    get controller() {
      return running.controller;
    },
    get dispatcher() {
      return running.dispatcher;
    },
    close: () => running.close(),
    async restart() {
      await running.close();
      running = await startSystem(config);
    },
  };
  return system;
}

const PORT_SETTINGS = ['CONTROLLER_PORT', 'DISPATCHER_PORT'] as const;
const PORT_TRIES = 3;

/**
 * Boots on the ports `testEnv` found free. A port free a moment ago can be taken before the
 * server listens (another Jest worker's port or outgoing connection): when the ports were chosen
 * here, not by the spec, the boot is tried again on fresh ones (startSystem closes what it opened
 * before it throws).
 */
async function bootOnFreePorts(options: TestSystemOptions): Promise<{ config: AppConfig; running: RunningSystem }> {
  let env = await testEnv(options);
  const portsChosenHere = PORT_SETTINGS.every((setting) => options.env?.[setting] === undefined);
  for (let attempt = 1; ; attempt++) {
    const config = loadConfig(env);
    try {
      return { config, running: await startSystem(config) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || !portsChosenHere || attempt >= PORT_TRIES) throw error;
      env = { ...env, CONTROLLER_PORT: String(await freePort()), DISPATCHER_PORT: String(await freePort()) };
    }
  }
}

/** A second controller of a test system, in a process of its own. */
export interface ControllerReplica {
  process: RoleProcess;
  url: string;
  /** The system as seen through the replica: the same tokens and settings, its controller URL. */
  view: TestSystem;
}

/**
 * Boots a second controller on `system`'s database with its operator token, secrets and (when
 * it uses the S3 server) bucket, as a second replica of one deployment runs; `env` adds settings.
 */
export async function startControllerReplica(system: TestSystem, env: Record<string, string | undefined> = {}): Promise<ControllerReplica> {
  const s3 = system.config.s3;
  const settings = await testEnv({
    role: 'controller',
    storage: s3 ? 's3' : 'folder',
    databaseUrl: system.config.databaseUrl!,
    env: {
      API_TOKEN: system.apiToken,
      SECRET_KEY: system.config.secretKey,
      CALLBACK_SIGNING_KEY: system.config.callbackSigningKey ?? undefined,
      ...(s3 ? { S3_BUCKET: s3.bucket } : {}),
      ...env,
    },
  });
  const url = `http://127.0.0.1:${settings.CONTROLLER_PORT}`;
  const process = await new RoleProcess(settings, `${url}/health/`).start();
  return { process, url, view: { ...system, controllerUrl: url } };
}
