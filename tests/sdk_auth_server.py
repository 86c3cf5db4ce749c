"""The official SDK's MCPServer behind the SDK's own OAuth: an authorization server and a resource
server in one process, as in the SDK's simple-auth example, for tests/test_mcp_auth_client.py.
Its authorization endpoint approves at once (no user), and every token it issues expires within
REFRESH_EARLY of mcp_auth, so a client that keeps tokens fresh refreshes before each request.

    python tests/sdk_auth_server.py PORT    (serves http://127.0.0.1:PORT/mcp)
"""
import secrets
import sys
import time

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (AccessToken, AuthorizationCode, RefreshToken,
                                      construct_redirect_uri)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthToken

LIFETIME = 30  # seconds: under mcp_auth.REFRESH_EARLY


class ApprovingProvider:
    """An in-memory OAuthAuthorizationServerProvider that approves every authorization."""

    def __init__(self):
        self.clients, self.codes, self.access, self.refresh = {}, {}, {}, {}
        self.refreshed = 0

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params):
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, resource=params.resource,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code):
        del self.codes[authorization_code.code]
        return self.issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        del self.refresh[refresh_token.token]
        self.refreshed += 1
        return self.issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        return self.access.get(token)

    async def revoke_token(self, token):
        self.access.pop(token.token, None)

    def issue(self, client_id, scopes, resource):
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + LIFETIME,
                                          resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=LIFETIME,
                          refresh_token=refresh, scope=" ".join(scopes))


def main():
    port = int(sys.argv[1])
    base = f"http://127.0.0.1:{port}"
    provider = ApprovingProvider()
    settings = AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp",
                            required_scopes=["mcp:read"], validate_token_resource=True,
                            client_registration_options=ClientRegistrationOptions(
                                enabled=True, valid_scopes=["mcp:read", "mcp:write"]))
    server = MCPServer("sdk-auth-test", auth_server_provider=provider, auth=settings)

    @server.tool()
    def whoami() -> dict:
        """Who the token says the caller is, and how often tokens were refreshed so far."""
        token = get_access_token()
        return {"client_id": token.client_id, "scopes": token.scopes,
                "resource": token.resource, "refreshed": provider.refreshed}

    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
