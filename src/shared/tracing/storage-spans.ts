import { SpanKind, trace } from '@opentelemetry/api';
import { tracingStarted } from './sdk';
import { inSpan } from './trace-context';


export interface StorageCall {
  /** The S3 operation: PutObject, GetObject, HeadObject, DeleteObject, ... */
  operation: string;
  bucket: string;
  key?: string;
  server: { address: string; port: number };
}

/**
 * Runs one object storage call in a CLIENT span named as the AWS SDK's instrumentation names
 * them (`S3.PutObject`, with the `rpc.*` and `aws.s3.*` attributes), a child of the active span.
 * With no SDK running, or outside every trace (a loop's sweep: a trace of one span would say
 * nothing), it just runs.
 */
export function inStorageSpan<T>(call: StorageCall, work: () => Promise<T>): Promise<T> {
  if (!tracingStarted() || !trace.getActiveSpan()?.isRecording()) return work();
  const attributes = {
    'rpc.system': 'aws-api',
    'rpc.service': 'S3',
    'rpc.method': call.operation,
    'aws.s3.bucket': call.bucket,
    ...(call.key === undefined ? {} : { 'aws.s3.key': call.key }),
    'server.address': call.server.address,
    'server.port': call.server.port,
  };
  return inSpan(`S3.${call.operation}`, { kind: SpanKind.CLIENT, attributes }, work);
}
