import { startTracing } from './sdk';

// Imported first by `main.ts`: when the OTEL_* variables ask for traces, the SDK patches http,
// express, pg, ioredis and fetch (undici) before any module loads them. See docs/tracing.md.
startTracing();
