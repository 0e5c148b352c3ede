// Reference server for bench/identity_token_bench.sh: npm oidc-provider issuing ES256 JWT access
// tokens (RFC 9068, via a resource indicator) for the client_credentials grant, one worker per
// core (node:cluster), so it uses the same 2 cores sika gets.
//
//   node bench/oidc-provider/server.mjs PORT
//
// Client: bench-client / bench-secret-0123456789abcdef0123456789abcdef (client_secret_post).
import cluster from 'node:cluster';
import os from 'node:os';
import { generateKeyPair, exportJWK } from 'jose';

const port = Number(process.argv[2] || 3999);
const workers = Number(process.env.WORKERS || os.availableParallelism());

if (cluster.isPrimary) {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'bench-es256', alg: 'ES256', use: 'sig' };
  for (let i = 0; i < workers; i++) cluster.fork({ BENCH_JWK: JSON.stringify(jwk) });
  cluster.on('exit', () => process.exit(1));
} else {
  const { default: Provider } = await import('oidc-provider');
  const audience = 'urn:sika:gateway';
  const provider = new Provider(`http://127.0.0.1:${port}`, {
    clients: [{
      client_id: 'bench-client',
      client_secret: 'bench-secret-0123456789abcdef0123456789abcdef',
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_post',
      id_token_signed_response_alg: 'ES256',
    }],
    jwks: { keys: [JSON.parse(process.env.BENCH_JWK)] },
    cookies: { keys: ['bench-cookie-key-0123456789abcdef'] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'payments services countries providers',
          audience,
          accessTokenTTL: 3600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
  });
  provider.listen(port, '127.0.0.1');
}
