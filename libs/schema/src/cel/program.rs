//! Compiling one CEL expression: parse, check, instrument.
//!
//! Without a type checker, the checks are the ones the AST allows: names must be declared
//! (`self`, `oldSelf`, macro variables); message literals (`Foo{...}`) and the macros this
//! interpreter lacks are refused; the caller may add its own check (see [`fields`]).
//! The expression is then rewritten with the metering calls of [`cost`], and optional field
//! selection is rewritten around an interpreter bug.
//!
//! [`fields`]: super::fields

use std::sync::LazyLock;

use kube_cel::KubeCelExt;
use kube_cel::cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, IdedExpr, operators};
use kube_cel::cel::parser::Parser;
use kube_cel::cel::{self, Context, ExecutionError, FunctionContext, ResolveResult, Value};

use super::{cost, guard};

/// The variables a validation rule may name.
pub(super) const SELF: &str = "self";
pub(super) const OLD_SELF: &str = "oldSelf";

/// What Kubernetes accepts but this interpreter cannot run: refusing the CRD beats failing
/// every write of its resources. Functions named `(namespace, name)`.
const UNSUPPORTED: &[(Option<&str>, &str)] = &[
    (Some("cel"), "bind"),
    (None, "sortBy"),
    (None, "transformList"),
    (None, "transformMap"),
    (None, "transformMapEntry"),
    (None, "type"),
];

/// Macros that take a second variable in their three-argument form (`all(i, v, ...)`).
const TWO_VARIABLE_MACROS: &[&str] = &["all", "exists", "exists_one"];

/// Every function of `cel` and `kube-cel`, plus the meter; shared by all evaluations.
static BASE: LazyLock<Context<'static>> = LazyLock::new(|| {
    let mut ctx = Context::default().with_all();
    guard::register(&mut ctx);
    // `dyn()` only matters to a type checker; here it is the identity.
    ctx.add_function("dyn", dyn_identity);
    cost::register(&mut ctx);
    ctx
});

fn dyn_identity(_: &FunctionContext, value: Value) -> ResolveResult {
    Ok(value)
}

/// The root context evaluations build their scopes on.
pub(super) fn base() -> &'static Context<'static> {
    &BASE
}

/// A compiled, instrumented expression.
#[derive(Debug)]
pub(super) struct Program {
    expr: IdedExpr,
    /// Whether the expression names `oldSelf` (a transition rule).
    pub uses_old_self: bool,
    /// The fields of `self` the expression reads, when it reads `self` only as `self.<field>`;
    /// `None` when it needs `self` whole (`size(self)`, `self.all(...)`, `self == ...`). Lets the
    /// evaluator convert only those fields of a large object.
    pub self_fields: Option<Vec<String>>,
    /// Cost charged before evaluation: the nodes evaluated outside loop bodies.
    pub base_cost: u64,
}

impl Program {
    /// Parses and checks `source`, which `check` may also refuse; the error is the detail
    /// Kubernetes puts after `compilation failed: `.
    pub fn compile(
        source: &str,
        check: &dyn Fn(&IdedExpr) -> Option<String>,
    ) -> Result<Program, String> {
        Program::compile_declaring(source, &[], check)
    }

    /// Like [`Program::compile`], with `declared` names usable besides `self` and `oldSelf`.
    pub fn compile_declaring(
        source: &str,
        declared: &[&str],
        check: &dyn Fn(&IdedExpr) -> Option<String>,
    ) -> Result<Program, String> {
        let parsed = Parser::default()
            .enable_optional_syntax(true)
            .parse(source)
            .map_err(|e| e.to_string())?;
        let mut names = Check {
            declared: declared.iter().map(|d| d.to_string()).collect(),
            ..Check::default()
        };
        names.expr(&parsed, &mut Vec::new());
        if let Some(error) = names.error.or_else(|| check(&parsed)) {
            return Err(format!("ERROR: <input>: {error}"));
        }
        let base_cost = straight_cost(&parsed);
        let expr = Instrument::new().expr(parsed, false)?;
        let self_fields = (!names.self_whole).then(|| {
            let mut fields = names.self_fields;
            fields.sort();
            fields.dedup();
            fields
        });
        Ok(Program {
            expr,
            uses_old_self: names.uses_old_self,
            self_fields,
            base_cost,
        })
    }

    /// Evaluates in `ctx`. A panic inside the interpreter (it has a few `todo!`s) becomes an
    /// error instead of taking the request down.
    pub fn execute(&self, ctx: &Context<'_>) -> ResolveResult {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Value::resolve(&self.expr, ctx)
        }))
        .unwrap_or_else(|_| {
            Err(ExecutionError::function_error(
                "cel",
                "internal error in the expression interpreter",
            ))
        })
    }
}

#[derive(Default)]
struct Check {
    error: Option<String>,
    uses_old_self: bool,
    /// Fields read as `self.<field>`, and whether `self` is used any other way.
    self_fields: Vec<String>,
    self_whole: bool,
    /// Top-level variables of the caller (e.g. `object`, `request`).
    declared: Vec<String>,
}

impl Check {
    /// Walks `e` with `scope` holding the macro variables in reach.
    fn expr(&mut self, e: &IdedExpr, scope: &mut Vec<String>) {
        if self.error.is_some() {
            return;
        }
        match &e.expr {
            Expr::Ident(name) => {
                if scope.iter().any(|s| s == name) {
                    return;
                }
                match name.as_str() {
                    SELF => self.self_whole = true,
                    OLD_SELF => self.uses_old_self = true,
                    _ if self.declared.iter().any(|d| d == name) => {}
                    _ => {
                        self.error = Some(format!(
                            "undeclared reference to '{name}' (in container '')"
                        ))
                    }
                }
            }
            Expr::Call(call) => {
                let namespace = match call.target.as_deref().map(|t| &t.expr) {
                    Some(Expr::Ident(n)) => Some(n.as_str()),
                    _ => None,
                };
                let unsupported = UNSUPPORTED.iter().any(|(ns, name)| {
                    *name == call.func_name && (ns.is_none() || *ns == namespace)
                }) || (call.target.is_some()
                    && call.args.len() == 3
                    && TWO_VARIABLE_MACROS.contains(&call.func_name.as_str()));
                if unsupported {
                    self.error = Some(format!(
                        "'{}' with {} arguments is not supported by this server",
                        call.func_name,
                        call.args.len()
                    ));
                    return;
                }
                if let Some(target) = &call.target {
                    // `sets.contains(...)`: a bare name before a call may be a namespace.
                    let namespace = matches!(&target.expr, Expr::Ident(n)
                        if n != SELF && n != OLD_SELF && !scope.iter().any(|s| s == n)
                            && !self.declared.iter().any(|d| d == n));
                    if !namespace {
                        self.expr(target, scope);
                    }
                }
                for arg in &call.args {
                    self.expr(arg, scope);
                }
            }
            Expr::Select(select) => match &select.operand.expr {
                Expr::Ident(name) if name == SELF && !scope.iter().any(|s| s == name) => {
                    self.self_fields.push(select.field.clone());
                }
                _ => self.expr(&select.operand, scope),
            },
            Expr::List(list) => {
                for element in &list.elements {
                    self.expr(element, scope);
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(m) => {
                            self.expr(&m.key, scope);
                            self.expr(&m.value, scope);
                        }
                        EntryExpr::StructField(f) => {
                            self.error = Some(format!("unsupported field '{}'", f.field));
                        }
                    }
                }
            }
            Expr::Comprehension(c) => {
                self.expr(&c.iter_range, scope);
                self.expr(&c.accu_init, scope);
                let depth = scope.len();
                scope.push(c.iter_var.clone());
                scope.extend(c.iter_var2.clone());
                scope.push(c.accu_var.clone());
                self.expr(&c.loop_cond, scope);
                self.expr(&c.loop_step, scope);
                self.expr(&c.result, scope);
                scope.truncate(depth);
            }
            Expr::Literal(_) => {}
            Expr::Struct(s) => {
                self.error = Some(format!(
                    "undeclared reference to '{}' (in container '')",
                    s.type_name
                ));
            }
            Expr::Unspecified => self.error = Some("unsupported expression".to_owned()),
        }
    }
}

/// Nodes evaluated once per evaluation: every node outside loop bodies.
fn straight_cost(e: &IdedExpr) -> u64 {
    let mut cost = 0;
    visit(e, &mut |node| {
        cost += 1;
        match &node.expr {
            // The body is charged by its ticks; range, init and result run once.
            Expr::Comprehension(c) => Some(vec![&c.iter_range, &c.accu_init, &c.result]),
            _ => None,
        }
    });
    cost
}

/// Calls `f` on `e` and its descendants; `f` may name the children to visit (default: all).
fn visit<'a>(e: &'a IdedExpr, f: &mut impl FnMut(&'a IdedExpr) -> Option<Vec<&'a IdedExpr>>) {
    let children = f(e).unwrap_or_else(|| children(e));
    for child in children {
        visit(child, f);
    }
}

fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    match &e.expr {
        Expr::Call(call) => call.target.iter().map(|t| &**t).chain(&call.args).collect(),
        Expr::Select(select) => vec![&select.operand],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => map
            .entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(m) => vec![&m.key, &m.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })
            .collect(),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        Expr::Struct(s) => s
            .entries
            .iter()
            .flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(m) => vec![&m.key, &m.value],
                EntryExpr::StructField(f) => vec![&f.value],
            })
            .collect(),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Vec::new(),
    }
}

/// Cost of one iteration of `c`: the nodes of its condition and step, nested loops excluded
/// (they tick for themselves).
fn iteration_cost(c: &ComprehensionExpr) -> u64 {
    straight_cost(&c.loop_cond) + straight_cost(&c.loop_step)
}

/// Operators whose operands must stay as they are: optional access looks at its operand's
/// kind, and the logical ones short-circuit or swallow errors.
const UNSIZED_OPERATORS: &[&str] = &[
    operators::OPT_INDEX,
    operators::OPT_SELECT,
    operators::LOGICAL_AND,
    operators::LOGICAL_OR,
    operators::LOGICAL_NOT,
    operators::CONDITIONAL,
    operators::NOT_STRICTLY_FALSE,
];

/// Adds the metering calls described in [`cost`].
struct Instrument {
    /// Variables in reach: `self`, `oldSelf` and macro variables (not function namespaces).
    scope: Vec<String>,
}

impl Instrument {
    fn new() -> Self {
        Instrument {
            scope: vec![SELF.to_owned(), OLD_SELF.to_owned()],
        }
    }

    /// Rewrites `e`; `input` when it is a call's argument or target (a variable there is
    /// converted, hence sized).
    fn expr(&mut self, mut e: IdedExpr, input: bool) -> Result<IdedExpr, String> {
        let mut sized = false;
        match &mut e.expr {
            Expr::Comprehension(c) => {
                let cost = iteration_cost(c);
                let c = &mut **c;
                c.iter_range = self.expr(take(&mut c.iter_range), false)?;
                c.accu_init = self.expr(take(&mut c.accu_init), false)?;
                let depth = self.scope.len();
                self.scope.push(c.iter_var.clone());
                self.scope.extend(c.iter_var2.clone());
                self.scope.push(c.accu_var.clone());
                c.loop_cond = self.expr(take(&mut c.loop_cond), false)?;
                let step = self.expr(take(&mut c.loop_step), false)?;
                c.result = self.expr(take(&mut c.result), false)?;
                self.scope.truncate(depth);
                // The step runs once the item is bound: the tick can size it.
                let mut args = vec![int_literal(cost)?, step, ident(&c.accu_var)];
                args.push(ident(&c.iter_var));
                c.loop_step = call(cost::TICK, args);
            }
            Expr::Call(call) => {
                // `x.?f` fails on a missing key in this interpreter (and wraps an optional
                // operand's miss in a present optional); `x[?'f']` behaves as `x.?f` should.
                if call.func_name == operators::OPT_SELECT {
                    operators::OPT_INDEX.clone_into(&mut call.func_name);
                }
                let plain = !UNSIZED_OPERATORS.contains(&call.func_name.as_str());

                if let Some(target) = call.target.take() {
                    call.target = Some(Box::new(self.expr(*target, plain)?));
                }
                call.args = std::mem::take(&mut call.args)
                    .into_iter()
                    .map(|arg| self.expr(arg, plain))
                    .collect::<Result<_, _>>()?;
                sized = plain;
            }
            Expr::Select(select) => {
                let operand = take(&mut select.operand);
                *select.operand = self.expr(operand, false)?;
                sized = !select.test;
            }
            Expr::List(list) => {
                list.elements = std::mem::take(&mut list.elements)
                    .into_iter()
                    .map(|element| self.expr(element, true))
                    .collect::<Result<_, _>>()?;
            }
            Expr::Map(map) => {
                for entry in &mut map.entries {
                    if let EntryExpr::MapEntry(m) = &mut entry.expr {
                        m.key = self.expr(take(&mut m.key), true)?;
                        m.value = self.expr(take(&mut m.value), true)?;
                    }
                }
            }
            // A namespace (`sets` in `sets.contains`) must stay a bare name.
            Expr::Ident(name) => sized = input && self.scope.contains(name),
            Expr::Literal(_) | Expr::Struct(_) | Expr::Unspecified => {}
        }
        Ok(if sized { call(cost::SIZED, vec![e]) } else { e })
    }
}

fn take(e: &mut IdedExpr) -> IdedExpr {
    std::mem::take(e)
}

fn ident(name: &str) -> IdedExpr {
    IdedExpr {
        id: 0,
        expr: Expr::Ident(name.to_owned()),
    }
}

fn call(function: &str, args: Vec<IdedExpr>) -> IdedExpr {
    IdedExpr {
        id: 0,
        expr: Expr::Call(cel::common::ast::CallExpr {
            func_name: function.to_owned(),
            target: None,
            args,
        }),
    }
}

/// An integer literal node; the AST's literal types have no public constructor, so it is
/// parsed.
fn int_literal(n: u64) -> Result<IdedExpr, String> {
    Parser::default()
        .parse(&n.to_string())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn fields(source: &str) -> Option<Vec<String>> {
        Program::compile(source, &|_| None).unwrap().self_fields
    }

    #[test]
    fn reads_of_self_field_by_field_are_found() {
        assert_eq!(
            fields("self.b <= self.a && has(self.c) && self.a.x == 1"),
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(fields("oldSelf == 1"), Some(vec![]));
        // A macro variable named like a field is not `self`.
        assert_eq!(
            fields("self.items.all(self, self > 0)"),
            Some(vec!["items".into()])
        );
    }

    #[test]
    fn whole_uses_of_self_need_the_whole_object() {
        for source in [
            "size(self) > 0",
            "self.all(k, k != '')",
            "self == oldSelf",
            "self['a-b'] == 1",
            "[self].size() == 1",
        ] {
            assert_eq!(fields(source), None, "{source}");
        }
    }
}
