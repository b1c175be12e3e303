//! kcp-schema: OpenAPI v3 structural schemas.
