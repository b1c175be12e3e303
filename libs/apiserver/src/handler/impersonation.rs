//! Impersonation (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`): acting as another identity.

use kcp_apimachinery::status::ApiError;
use kcp_auth::UserInfo;

use crate::ApiServer;
use crate::request_info::RequestInfo;

impl ApiServer {
    /// The identity the request acts as: `user` itself without impersonation headers.
    pub(super) fn impersonate(
        &self,
        _parts: &http::request::Parts,
        user: UserInfo,
        _info: &RequestInfo,
    ) -> Result<UserInfo, ApiError> {
        Ok(user)
    }
}
