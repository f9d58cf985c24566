//! Trying an operator's parameters on a module before they are stored (`group set G
//! --strategy S --param k=v`, `PUT /v1/groups/{group}/config`), so a mistake (a bad pattern of
//! `filtered`, an unknown inner strategy) is refused with the module's own message when it is
//! made, not discovered at the group's next rebalance as a fallback assignment.
//!
//! Decision: the trial is one call of the module, in the sandbox, on the upload's synthetic
//! smoke group ([`super::smoke_request`]) with the new parameters. Not the group's own members:
//! a group may not exist yet when it is configured, and a trial must not depend on who happens
//! to be connected. The call does not count towards the version's health (an operator's typo
//! must never quarantine a module that every other group runs). Only the module's own verdict
//! refuses the parameters (an answer whose `error` is set); any other failure of the trial (a
//! trap, the fuel or time limit on a busy machine, an output the checks refuse) is logged and the
//! parameters are stored: it is a fault of the module or the machine, and the rebalance reports
//! it the usual way.

use std::collections::BTreeMap;

use super::{ModuleVersion, Registry, smoke_request};
use crate::sandbox::{CallError, CallTag};

impl Registry {
    /// Runs `module` on the smoke group with `params`. `Err` carries the module's message when
    /// it answers the trial with an error; `Ok` otherwise (see the module docs for why other
    /// failures do not refuse). Blocking (the module runs on this thread).
    pub fn try_params(
        &self,
        module: &ModuleVersion,
        params: &BTreeMap<String, String>,
    ) -> Result<(), String> {
        let mut request = smoke_request(&module.name);
        request.params = params.clone();
        let tag = CallTag {
            module: &module.name,
            version: module.version,
        };
        match self
            .sandbox()
            .assign(module.compiled(), tag, &request, module.is_cooperative())
        {
            Ok(_) => Ok(()),
            Err(failure) => match failure.error {
                CallError::Guest { message } => Err(message),
                other => {
                    tracing::warn!(
                        module = %module.name,
                        version = module.version,
                        error = %other,
                        "trial call with the new parameters failed; parameters stored anyway"
                    );
                    Ok(())
                }
            },
        }
    }
}
