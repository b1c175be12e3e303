//! kcp-auth: who is calling ([`authn`]) and whether they may do what they ask ([`authz`]).

pub mod authn;
pub mod authz;

pub use authn::{
    Authenticator, AuthenticatorChain, AuthnResult, CaBundle, IdentityHeaders,
    RequestHeaderAuthenticator, ServiceAccountAuthenticator, ServiceAccountLookup,
    ServiceAccountTokens, TokenFileAuthenticator, TokenIssuer, UserInfo, X509Authenticator,
};
pub use authz::{
    Attributes, Authorizer, AuthorizerChain, ClusterFacts, Decision, KcpAuthorizer,
    NoRequiredGroups, RbacAuthorizer, RbacIndex,
};
