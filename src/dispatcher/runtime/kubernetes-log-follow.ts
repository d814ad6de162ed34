import { ApiException, HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { fetch } from 'undici';

/**
 * One `?follow=true` read of a pod's agent container log: what it holds, then what it
 * writes, until the container ends (or `signal`). Written against the client's own
 * authentication and TLS setup (as its `Log` helper is), but handing the body over as an
 * async iterable, so an error mid-stream reaches the reader instead of leaving it waiting.
 * A long-lived read, so it does not go through the rate limiter of Job submissions.
 */
export async function followPodLog(kubeConfig: KubeConfig, namespace: string, podName: string, signal: AbortSignal): Promise<AsyncIterable<string>> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('The kubeconfig names no current cluster');
  const url = new URL(`${cluster.server}/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(podName)}/log`);
  url.searchParams.set('container', 'agent');
  url.searchParams.set('follow', 'true');
  const context = new RequestContext(url.toString(), HttpMethod.GET);
  await kubeConfig.applySecurityAuthentication(context);
  const response = await fetch(url, { headers: context.getHeaders(), dispatcher: context.getDispatcher(), signal });
  if (response.status !== 200 || !response.body) {
    const body = await response.text().catch(() => '');
    throw new ApiException(response.status, `pod log follow answered ${response.status}`, body, {});
  }
  const body = response.body;
  return (async function* decode() {
    const decoder = new TextDecoder();
    for await (const chunk of body) {
      const text = decoder.decode(chunk as Uint8Array, { stream: true });
      if (text) yield text;
    }
    const rest = decoder.decode();
    if (rest) yield rest;
  })();
}
