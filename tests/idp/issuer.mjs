// A real OpenID Connect provider on loopback for the console's sign-in
// test: panva's `oidc-provider` (OpenID Certified), configured here and
// nothing of it reimplemented. The test installs the package pinned in
// tests/src/lib.rs and runs:
//
//   OIDC_PROVIDER=.../node_modules/oidc-provider/lib/index.js PORT=N \
//   REDIRECT_URI=http://127.0.0.1:M/console/ TOKEN_TTL=SECONDS \
//   ACCOUNTS='{"alice": {"email": "...", "scout_roles": ["approver:acme"]}}' \
//   node issuer.mjs
//
// One public client, `scout-console`, with PKCE required (S256) and
// refresh tokens; its ID tokens carry `email` and `scout_roles` and live
// TOKEN_TTL seconds. The login page is the provider's own development
// interaction (any password). A refresh token revoked at the provider's
// own revocation endpoint (RFC 7009) stops refreshing. Each token issued
// prints a JSON line (`{"grant": "authorization_code"}`); the first line
// says where it listens.
import { pathToFileURL } from "node:url";

const { default: Provider } = await import(pathToFileURL(process.env.OIDC_PROVIDER).href);
const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const ttl = Number(process.env.TOKEN_TTL || "300");
const accounts = JSON.parse(process.env.ACCOUNTS || "{}");

const provider = new Provider(issuer, {
  clients: [{
    client_id: "scout-console",
    token_endpoint_auth_method: "none",
    redirect_uris: [process.env.REDIRECT_URI],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
  }],
  pkce: { required: () => true },
  scopes: ["openid", "offline_access", "email", "scout"],
  claims: { openid: ["sub"], email: ["email"], scout: ["scout_roles"] },
  // The claims go in the ID token itself, which the console sends.
  conformIdTokenClaims: false,
  findAccount: async (_ctx, id) => ({
    accountId: id,
    // `sub` is opaque, as Entra and Okta make it; `email` names the person.
    claims: async () => ({
      sub: `opaque-${Buffer.from(id).toString("hex")}`,
      email: (accounts[id] || {}).email || `${id}@example.invalid`,
      scout_roles: (accounts[id] || {}).scout_roles || [],
    }),
  }),
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed("refresh_token"),
  ttl: { IdToken: ttl, AccessToken: ttl, AuthorizationCode: 60, RefreshToken: 3600, Grant: 3600, Session: 3600, Interaction: 600 },
  features: { devInteractions: { enabled: true }, revocation: { enabled: true } },
  loadExistingGrant: async (ctx) => {
    // Consent is given once per person: a second sign-in does not ask again.
    // (A revoked refresh token revokes its grant: then a new one.)
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    const existing = grantId && (await ctx.oidc.provider.Grant.find(grantId));
    if (existing) return existing;
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope("openid email scout offline_access");
    grant.addOIDCClaims(["email", "scout_roles"]);
    await grant.save();
    return grant;
  },
});
provider.proxy = false;

provider.on("grant.success", (ctx) => {
  console.log(JSON.stringify({ grant: ctx.oidc.params.grant_type }));
});
provider.on("server_error", (_ctx, error) => console.error("server_error", error));

provider.listen(port, "127.0.0.1", () => {
  console.log(JSON.stringify({ listening: issuer }));
});
