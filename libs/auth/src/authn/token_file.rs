//! Static bearer tokens from `--token-auth-file`, in Kubernetes' CSV format:
//! `token,user,uid[,"group1,group2"]`, one record per line.
//!
//! As upstream: columns past the fourth are ignored, records with an empty token are skipped (with a
//! warning), a token listed twice keeps its last record (with a warning), and there are no comment
//! lines — a `#` line is a record like any other, so it fails for having too few columns.

mod csv;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rustls_pki_types::CertificateDer;

use crate::authn::bearer::bearer_token;
use crate::authn::{AUTHENTICATED_GROUP, Authenticator, AuthnResult, UserInfo};

#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("reading token file {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("token file line {line}: {reason}")]
    Csv { line: usize, reason: &'static str },
    #[error(
        "token file line {line}: at least 3 columns are needed (token, user name, user uid), found {found}"
    )]
    TooFewColumns { line: usize, found: usize },
}

/// Authenticates `Authorization: Bearer <token>` against a fixed table of tokens.
#[derive(Debug, Default)]
pub struct TokenFileAuthenticator {
    tokens: HashMap<String, UserInfo>,
}

impl TokenFileAuthenticator {
    pub fn from_file(path: &Path) -> Result<TokenFileAuthenticator, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        TokenFileAuthenticator::parse(&text)
    }

    pub fn parse(text: &str) -> Result<TokenFileAuthenticator, TokenFileError> {
        let records = csv::records(text).map_err(|e| TokenFileError::Csv {
            line: e.line,
            reason: e.reason,
        })?;
        let mut tokens = HashMap::new();
        for record in records {
            let [token, name, uid, rest @ ..] = record.fields.as_slice() else {
                return Err(TokenFileError::TooFewColumns {
                    line: record.line,
                    found: record.fields.len(),
                });
            };
            if token.is_empty() {
                tracing::warn!(line = record.line, "token file: empty token skipped");
                continue;
            }
            // Upstream splits the fourth column on commas as is; empty pieces would be groups named "".
            let mut groups: Vec<String> = rest
                .first()
                .map(|g| {
                    g.split(',')
                        .filter(|g| !g.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
                groups.push(AUTHENTICATED_GROUP.to_string());
            }
            let user = UserInfo {
                name: name.clone(),
                uid: uid.clone(),
                groups,
                ..UserInfo::default()
            };
            if tokens.insert(token.clone(), user).is_some() {
                tracing::warn!(
                    line = record.line,
                    "token file: duplicate token, the last one wins"
                );
            }
        }
        Ok(TokenFileAuthenticator { tokens })
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

impl Authenticator for TokenFileAuthenticator {
    fn authenticate(
        &self,
        parts: &http::request::Parts,
        _peer_certificates: &[CertificateDer<'static>],
    ) -> AuthnResult {
        // An unknown token may be another authenticator's (a ServiceAccount JWT), so it is not ours to
        // reject; the handler answers 401 when no authenticator takes it.
        match bearer_token(parts).and_then(|token| self.tokens.get(token)) {
            Some(user) => AuthnResult::Authenticated(user.clone()),
            None => AuthnResult::NoCredential,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn request(authorization: &str) -> http::request::Parts {
        http::Request::builder()
            .header(http::header::AUTHORIZATION, authorization)
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    fn user_of(authn: &TokenFileAuthenticator, token: &str) -> Option<UserInfo> {
        match authn.authenticate(&request(&format!("Bearer {token}")), &[]) {
            AuthnResult::Authenticated(user) => Some(user),
            AuthnResult::NoCredential => None,
            AuthnResult::Invalid(reason) => panic!("invalid: {reason}"),
        }
    }

    #[test]
    fn users_uids_and_groups() {
        let authn = TokenFileAuthenticator::parse(
            "t1,alice,uid-a,\"dev,ops\"\n\
             t2,bob,uid-b\n\
             t3,carol,uid-c,\"\",ignored\n\
             t4,dave,uid-d,system:authenticated\n",
        )
        .unwrap();
        assert_eq!(authn.len(), 4);
        let alice = user_of(&authn, "t1").unwrap();
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.uid, "uid-a");
        assert_eq!(alice.groups, ["dev", "ops", AUTHENTICATED_GROUP]);
        assert_eq!(user_of(&authn, "t2").unwrap().groups, [AUTHENTICATED_GROUP]);
        assert_eq!(user_of(&authn, "t3").unwrap().groups, [AUTHENTICATED_GROUP]);
        assert_eq!(user_of(&authn, "t4").unwrap().groups, [AUTHENTICATED_GROUP]);
    }

    #[test]
    fn unknown_or_missing_tokens_are_no_credential() {
        let authn = TokenFileAuthenticator::parse("t1,alice,uid-a\n").unwrap();
        assert_eq!(user_of(&authn, "t2"), None);
        assert_eq!(
            authn.authenticate(&request("Basic dDE6"), &[]),
            AuthnResult::NoCredential
        );
        let no_header = http::Request::new(()).into_parts().0;
        assert_eq!(
            authn.authenticate(&no_header, &[]),
            AuthnResult::NoCredential
        );
        // The scheme is case-insensitive.
        assert!(matches!(
            authn.authenticate(&request("bEaReR t1"), &[]),
            AuthnResult::Authenticated(_)
        ));
    }

    #[test]
    fn blank_lines_empty_tokens_and_duplicates() {
        let authn =
            TokenFileAuthenticator::parse("\n,nobody,uid-0\nt1,first,1\n\r\nt1,second,2").unwrap();
        assert_eq!(authn.len(), 1);
        assert_eq!(user_of(&authn, "t1").unwrap().name, "second");
        assert!(TokenFileAuthenticator::parse("").unwrap().is_empty());
    }

    #[test]
    fn errors_carry_the_line_number() {
        let err = TokenFileAuthenticator::parse("t1,alice,1\n\nt2,bob\n").unwrap_err();
        assert!(
            matches!(err, TokenFileError::TooFewColumns { line: 3, found: 2 }),
            "{err}"
        );
        assert!(err.to_string().contains("line 3"), "{err}");
        // No comments in this format: a `#` line is a one-column record.
        let err = TokenFileAuthenticator::parse("# tokens\nt1,alice,1\n").unwrap_err();
        assert!(
            matches!(err, TokenFileError::TooFewColumns { line: 1, found: 1 }),
            "{err}"
        );
        let err = TokenFileAuthenticator::parse("t1,alice,1\nt\"2,bob,2\n").unwrap_err();
        assert!(matches!(err, TokenFileError::Csv { line: 2, .. }), "{err}");
    }

    #[test]
    fn reads_files() {
        let dir = std::env::temp_dir().join(format!("kcp-auth-tokens-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.csv");
        std::fs::write(&path, "secret,alice,uid-a,admins\n").unwrap();
        let authn = TokenFileAuthenticator::from_file(&path).unwrap();
        assert_eq!(user_of(&authn, "secret").unwrap().name, "alice");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(matches!(
            TokenFileAuthenticator::from_file(&path),
            Err(TokenFileError::Io { .. })
        ));
    }
}
