/**
 * openEO's authentication on Geofabric's API keys (docs/protocol.md §16.2): `GET /credentials/basic` takes HTTP
 * Basic with the key as password (the user name is not checked: a key names its holder), and answers the key
 * as the access token; later requests send `Authorization: Bearer basic//<token>`, openEO's form for a token
 * from HTTP Basic. The token is the key itself, so revoking the key (`geofabric apikey revoke`) ends it at once.
 * Refusals are openEO's: AuthenticationRequired (401) without credentials, AuthenticationSchemeInvalid (403) for
 * another scheme (OIDC), CredentialsInvalid (403) for a wrong Basic password, TokenInvalid (403) for a wrong token.
 */
import { OpenEoError } from '../../core/openeo/errors.js';
import type { ApiKeyRecord } from '../../store/api-key-store.js';

/** At most this long a key or token is read: real keys are a few dozen characters. */
const MAX_CREDENTIAL = 512;

/** The API key a request authenticates with (Basic password or `basic//` bearer token), or the openEO refusal. */
export async function checkOpenEoCredentials(
  authorization: string,
  find: (key: string) => Promise<ApiKeyRecord | null>,
): Promise<ApiKeyRecord> {
  const header = authorization.trim();
  if (header === '') {
    throw new OpenEoError('AuthenticationRequired', 'Unauthorized: send Authorization: Bearer basic//<API key>.');
  }
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header)?.[1];
  if (basic !== undefined) {
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const password = colon < 0 ? '' : decoded.slice(colon + 1);
    const key = password !== '' && password.length <= MAX_CREDENTIAL ? await find(password) : null;
    if (key) return key;
    throw new OpenEoError('CredentialsInvalid', 'Credentials are not correct: the password must be an API key.');
  }
  const bearer = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
  if (bearer === undefined || !bearer.startsWith('basic//')) {
    throw new OpenEoError(
      'AuthenticationSchemeInvalid',
      'Authentication method not supported: use HTTP Basic (GET /credentials/basic), then Bearer basic//<token>.',
    );
  }
  const token = bearer.slice('basic//'.length);
  const key = token !== '' && token.length <= MAX_CREDENTIAL ? await find(token) : null;
  if (key) return key;
  throw new OpenEoError('TokenInvalid', 'Authorization token has expired or is invalid. Please authenticate again.');
}
