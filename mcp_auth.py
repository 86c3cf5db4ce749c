"""mcp_auth: authorization for MCP over Streamable HTTP (OAuth 2.1), standard library only.

Two halves, one for each side of the wire:
  1. The resource server: what mcp_http.serve(..., auth=...) uses to ask every HTTP request for a
     bearer token, check it, and say where to get one (RFC 9728 metadata, WWW-Authenticate).
  2. The client: what HTTPClient in client.py runs by itself on a 401 or a 403: discovery,
     registration, PKCE, the token request, refresh and step-up.
Stdio never uses any of this: the spec says a stdio server takes its credentials from the
environment.
Spec: https://modelcontextprotocol.io/specification/2026-07-28/basic/authorization
"""


# === 1. The resource server (spec: Authorization, "Authorization Server Discovery") ===


# === 2. The client: the authorization flow (spec: Authorization, "Authorization Flow Steps") ===
