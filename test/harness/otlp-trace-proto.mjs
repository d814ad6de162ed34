// The part of the OTLP trace protocol (opentelemetry-proto, trace/v1, common/v1, resource/v1)
// that a receiver reads, as a protobufjs schema: fields not named here are skipped by the decoder.
import protobuf from 'protobufjs';

const schema = {
  nested: {
    AnyValue: {
      oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'] } },
      fields: {
        stringValue: { type: 'string', id: 1 }, boolValue: { type: 'bool', id: 2 }, intValue: { type: 'int64', id: 3 },
        doubleValue: { type: 'double', id: 4 }, arrayValue: { type: 'ArrayValue', id: 5 }, kvlistValue: { type: 'KeyValueList', id: 6 }, bytesValue: { type: 'bytes', id: 7 },
      },
    },
    ArrayValue: { fields: { values: { rule: 'repeated', type: 'AnyValue', id: 1 } } },
    KeyValueList: { fields: { values: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
    Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    InstrumentationScope: { fields: { name: { type: 'string', id: 1 }, version: { type: 'string', id: 2 } } },
    Status: { fields: { message: { type: 'string', id: 2 }, code: { type: 'int32', id: 3 } } },
    Link: { fields: { traceId: { type: 'bytes', id: 1 }, spanId: { type: 'bytes', id: 2 }, attributes: { rule: 'repeated', type: 'KeyValue', id: 4 } } },
    Span: {
      fields: {
        traceId: { type: 'bytes', id: 1 }, spanId: { type: 'bytes', id: 2 }, parentSpanId: { type: 'bytes', id: 4 }, name: { type: 'string', id: 5 },
        kind: { type: 'int32', id: 6 }, attributes: { rule: 'repeated', type: 'KeyValue', id: 9 }, links: { rule: 'repeated', type: 'Link', id: 13 }, status: { type: 'Status', id: 15 },
      },
    },
    ScopeSpans: { fields: { scope: { type: 'InstrumentationScope', id: 1 }, spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
  },
};

const request = protobuf.Root.fromJSON(schema).lookupType('ExportTraceServiceRequest');

const hex = (base64) => (base64 ? Buffer.from(base64, 'base64').toString('hex') : undefined);

/** An `application/x-protobuf` export as the `http/json` encoding's object (ids in hex, 64-bit integers as strings). */
export function decodeTraceRequest(body) {
  const decoded = request.toObject(request.decode(body), { longs: String, bytes: String });
  for (const resourceSpans of decoded.resourceSpans ?? []) {
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        Object.assign(span, { traceId: hex(span.traceId), spanId: hex(span.spanId), parentSpanId: hex(span.parentSpanId) });
        for (const link of span.links ?? []) Object.assign(link, { traceId: hex(link.traceId), spanId: hex(link.spanId) });
      }
    }
  }
  return decoded;
}
