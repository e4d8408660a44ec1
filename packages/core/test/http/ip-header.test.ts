/**
 * `ipHeader` (a CDN's client-IP header) at the unit level: the header is believed only from a trusted peer,
 * CloudFront's `ip:port` forms are read, and anything that is not an address is ignored.
 */
import { addressFromIpHeader, parseIpHeaderOption } from '../../src/http/ip-header';

const rules = parseIpHeaderOption(
  [
    { name: 'CloudFront-Viewer-Address', trustedFrom: ['130.176.0.0/16', '2600:9000::/28'] },
    { name: 'cf-connecting-ip', trustedFrom: ['173.245.48.0/20'] },
  ],
  'rateLimit.ipHeader',
);
const from = (peer: string, headers: Record<string, string>) =>
  addressFromIpHeader(rules, peer, headers);

it('is believed only from a trusted peer (IPv4, IPv4-mapped and IPv6 peers)', () => {
  const header = { 'cf-connecting-ip': '198.51.100.7' };
  expect(from('173.245.48.1', header)).toBe('198.51.100.7');
  expect(from('::ffff:173.245.63.254', header)).toBe('198.51.100.7');
  expect(from('173.245.64.0', header)).toBeUndefined();
  expect(from('2600:9000::1', header)).toBeUndefined();
  expect(from('2600:9000::1', { 'cloudfront-viewer-address': '198.51.100.7:443' })).toBe(
    '198.51.100.7',
  );
});

it("reads CloudFront's ip:port and [ipv6]:port forms; ignores what is not an address", () => {
  const cf = (value: string) => from('130.176.1.1', { 'cloudfront-viewer-address': value });
  expect(cf('198.51.100.7:46532')).toBe('198.51.100.7');
  expect(cf('[2001:db8::1]:46532')).toBe('2001:db8::1');
  expect(cf('2001:db8::1')).toBe('2001:db8::1');
  expect(cf('not-an-ip')).toBeUndefined();
  expect(cf('')).toBeUndefined();
  expect(from('130.176.1.1', {})).toBeUndefined();
});

it('a list in the header: its first entry', () => {
  expect(from('173.245.48.1', { 'cf-connecting-ip': '198.51.100.7, 10.0.0.1' })).toBe(
    '198.51.100.7',
  );
});
