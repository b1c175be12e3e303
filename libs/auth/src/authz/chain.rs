//! Asking several authorizers in turn, as Kubernetes' union authorizer.

use std::sync::Arc;

use crate::authz::{Attributes, Authorizer, Decision};

/// Runs `authorizers` in order: the first Allow or Deny decides. When all have no opinion the request is
/// refused (never [`Decision::NoOpinion`]) with no reason: the server words the refusal.
pub fn authorize_chain(authorizers: &[Arc<dyn Authorizer>], attrs: &Attributes<'_>) -> Decision {
    for authorizer in authorizers {
        match authorizer.authorize(attrs) {
            Decision::NoOpinion => continue,
            decided => return decided,
        }
    }
    Decision::Deny(String::new())
}

/// A list of authorizers that is itself an [`Authorizer`]. Unlike [`authorize_chain`] it answers
/// NoOpinion when every member does, so it can be nested inside a larger chain.
#[derive(Clone, Default)]
pub struct AuthorizerChain {
    authorizers: Vec<Arc<dyn Authorizer>>,
}

impl AuthorizerChain {
    pub fn new(authorizers: Vec<Arc<dyn Authorizer>>) -> Self {
        AuthorizerChain { authorizers }
    }
}

impl Authorizer for AuthorizerChain {
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        for authorizer in &self.authorizers {
            match authorizer.authorize(attrs) {
                Decision::NoOpinion => continue,
                decided => return decided,
            }
        }
        Decision::NoOpinion
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    struct Fixed(Decision);
    impl Authorizer for Fixed {
        fn authorize(&self, _: &Attributes<'_>) -> Decision {
            self.0.clone()
        }
    }

    fn chain(decisions: Vec<Decision>) -> Vec<Arc<dyn Authorizer>> {
        decisions
            .into_iter()
            .map(|d| Arc::new(Fixed(d)) as Arc<dyn Authorizer>)
            .collect()
    }

    #[test]
    fn first_decision_wins() {
        let a = Attributes::default();
        let deny = Decision::Deny("no".into());
        assert_eq!(
            authorize_chain(
                &chain(vec![Decision::NoOpinion, Decision::Allow, deny.clone()]),
                &a
            ),
            Decision::Allow
        );
        assert_eq!(
            authorize_chain(&chain(vec![deny.clone(), Decision::Allow]), &a),
            deny
        );
    }

    #[test]
    fn no_opinion_everywhere_denies() {
        let a = Attributes {
            verb: "get",
            path: "/x",
            ..Attributes::default()
        };
        for authorizers in [
            chain(vec![]),
            chain(vec![Decision::NoOpinion, Decision::NoOpinion]),
        ] {
            assert!(matches!(
                authorize_chain(&authorizers, &a),
                Decision::Deny(_)
            ));
        }
    }

    #[test]
    fn nested_chain_passes_no_opinion_up() {
        let a = Attributes::default();
        assert_eq!(
            AuthorizerChain::new(chain(vec![Decision::NoOpinion])).authorize(&a),
            Decision::NoOpinion
        );
        assert_eq!(
            AuthorizerChain::new(chain(vec![Decision::NoOpinion, Decision::Allow])).authorize(&a),
            Decision::Allow
        );
    }
}
