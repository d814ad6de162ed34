import * as ipaddr from 'ipaddr.js';
import { TargetPolicy, urlProblem } from './subscription-target';

const policy = (allowed: string[] = []) => new TargetPolicy(allowed.map((cidr) => ipaddr.parseCIDR(cidr)));

describe('TargetPolicy', () => {
  it('refuses loopback, private, link-local, CGNAT, ULA and unspecified addresses, and accepts public unicast ones', () => {
    for (const address of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '::1', 'fd00::1', 'fe80::1', '0.0.0.0', '::ffff:127.0.0.1']) {
      expect(policy().refusal(address)).toMatch(/not in SUBSCRIPTION_ALLOWED_CIDRS/);
    }
    for (const address of ['8.8.8.8', '2606:4700::1']) expect(policy().refusal(address)).toBeNull();
  });

  it('accepts what SUBSCRIPTION_ALLOWED_CIDRS names, and only that', () => {
    const open = policy(['10.20.0.0/16', '127.0.0.2/32']);
    expect(open.refusal('10.20.3.4')).toBeNull();
    expect(open.refusal('127.0.0.2')).toBeNull();
    expect(open.refusal('10.21.0.1')).not.toBeNull();
    expect(open.refusal('127.0.0.1')).not.toBeNull();
  });

  it('resolves a name and refuses it when every address it has is refused', async () => {
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) => policy().lookup('localhost', { all: true }, (failure) => resolve(failure)));
    expect(error?.message).toMatch(/^refused: localhost resolves to .*loopback/);
    const addresses = await new Promise<unknown>((resolve) => policy(['127.0.0.0/8', '::1/128']).lookup('localhost', { all: true }, (_failure, found) => resolve(found)));
    expect(addresses).toEqual(expect.arrayContaining([expect.objectContaining({ address: expect.stringMatching(/^(127\.0\.0\.1|::1)$/) })]));
  });

  it('checks a URL: http(s) only, https in production, no credentials, no refused literal address', () => {
    expect(urlProblem('https://hooks.example.com/x', true, policy())).toBeNull();
    expect(urlProblem('http://hooks.example.com/x', false, policy())).toBeNull();
    expect(urlProblem('http://hooks.example.com/x', true, policy())).toMatch(/https/);
    expect(urlProblem('ftp://hooks.example.com/', false, policy())).toMatch(/http or https/);
    expect(urlProblem('https://user:pw@hooks.example.com/', false, policy())).toMatch(/credentials/);
    expect(urlProblem('http://[::1]:8080/', false, policy())).toMatch(/loopback/);
    expect(urlProblem('nonsense', false, policy())).toMatch(/absolute URL/);
  });
});
