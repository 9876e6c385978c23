import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { printError } from '../../../src/cli/print-error.js';
import { fetchWithUrlCredentials } from '../../../src/util/credentials.js';

describe('credentials in URLs', () => {
  it("sends a base URL's user and password as Basic authorization, not in the URL fetch refuses", async () => {
    const seen: Array<{ url?: string; authorization?: string; proxy?: string }> = [];
    const server = createServer((request, response) => {
      const proxy = request.headers['proxy-authorization'];
      seen.push({ url: request.url, authorization: request.headers.authorization, ...(proxy && { proxy }) });
      response.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const response = await fetchWithUrlCredentials()(`http://proxy:p%40ss%2Fw@127.0.0.1:${port}/api/chat`, {
        method: 'POST',
        body: '{}',
      });
      expect(await response.text()).to.equal('ok');
      await fetchWithUrlCredentials()(`http://127.0.0.1:${port}/plain`);
      // a client that sends its own authorization (the Anthropic SDK) keeps it; the proxy's goes beside it
      await fetchWithUrlCredentials()(`http://proxy:geheim-99@127.0.0.1:${port}/v1/messages`, {
        headers: { authorization: 'Bearer key' },
      });
    } finally {
      server.close();
    }
    expect(seen).to.deep.equal([
      { url: '/api/chat', authorization: `Basic ${Buffer.from('proxy:p@ss/w').toString('base64')}` },
      { url: '/plain', authorization: undefined },
      {
        url: '/v1/messages',
        authorization: 'Bearer key',
        proxy: `Basic ${Buffer.from('proxy:geheim-99').toString('base64')}`,
      },
    ]);
  });

  it('prints no password of a URL an error message quotes', () => {
    let printed = '';
    const cause = new Error('connect ECONNREFUSED http://anthu:anthpw123@127.0.0.1:9');
    printError(new Error('ollama: http://user:topsecretpw@127.0.0.1:9: unreachable', { cause }), (text) => {
      printed += text;
    });
    expect(printed).to.equal(
      'cpe: ollama: http://user:***@127.0.0.1:9: unreachable\n  caused by: connect ECONNREFUSED http://anthu:***@127.0.0.1:9\n',
    );
  });
});
