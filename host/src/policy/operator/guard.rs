//! A policy's guard: the equality its first `when` clause begins with
//! (`context.args.repo == "octo/private"`, `principal.brand == "acme"`),
//! read from the policy once, at compile time, and compared with a call's
//! facts before Cedar evaluates the policy.
//!
//! Why: Cedar evaluates every policy that can apply to a call's action,
//! and each costs about a microsecond however early its condition fails
//! (measured: 100 in scope, about 57 µs a decision). Most argument rules
//! start with an equality on one argument, which a plain comparison
//! settles.
//!
//! Exact, never a guess: a policy is skipped only when its guard is
//! certainly false for the call, so Cedar would find its condition false
//! too, never an error. Cedar's `&&` stops at the first false operand and
//! evaluates left to right, and a policy's condition is its scope, then
//! its clauses in order: so the guard must be a conjunct of the first
//! clause, a `when`, with nothing before it but `has` tests (which cannot
//! err). It is certainly false only when the call's value is there with
//! the literal's type (a string, a whole number that Cedar holds, a
//! boolean) and differs, or when it is absent and a `has` test of it comes
//! first; a value absent otherwise, or of another shape, leaves the policy
//! to Cedar (where reading it errs, and an erring forbid matches).

use serde_json::Value;

use super::facts::CallFacts;

/// What a guard compares.
#[derive(Debug, Clone, PartialEq)]
enum On {
    /// `context.args.NAME`: an argument at the top of the call's arguments.
    Arg(String),
    /// `principal.brand`, `principal.role`, `principal.base_role`: facts
    /// every session has.
    Brand,
    Role,
    BaseRole,
}

/// The literal it compares with.
#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Str(String),
    Long(i64),
    Bool(bool),
}

/// `on == literal`, which must hold for the policy to match.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Guard {
    on: On,
    literal: Literal,
    /// A `has` test of the same argument comes before it
    /// (`context.args has limit && context.args.limit == 5`): the argument
    /// absent, the condition is false before the equality is read.
    tested_first: bool,
}

impl Guard {
    /// The guard of a policy from its JSON form (`Policy::to_json`), if
    /// it has one.
    pub(super) fn of(est: &Value) -> Option<Guard> {
        let first = est.get("conditions")?.as_array()?.first()?;
        if first.get("kind")?.as_str()? != "when" {
            return None;
        }
        let mut conjuncts = Vec::new();
        flatten_and(first.get("body")?, &mut conjuncts);
        let mut tested = Vec::new();
        for conjunct in conjuncts {
            if let Some(has) = conjunct.get("has") {
                tested.extend(args_attr(has));
                continue;
            }
            let mut guard = equality(conjunct)?;
            guard.tested_first =
                matches!(&guard.on, On::Arg(name) if tested.contains(&name.as_str()));
            return Some(guard);
        }
        None
    }

    /// Whether `facts` make the guard certainly false: the policy cannot
    /// match the call, and Cedar need not evaluate it.
    pub(super) fn rules_out(&self, facts: &CallFacts) -> bool {
        let principal = &facts.principal;
        let value = match &self.on {
            On::Arg(name) => match facts.args.get(name) {
                Some(value) => value,
                None => return self.tested_first,
            },
            On::Brand => return !self.literal.is_str(&principal.brand),
            On::Role => return !self.literal.is_str(&principal.role),
            On::BaseRole => return !self.literal.is_str(&principal.base_role),
        };
        match (&self.literal, value) {
            (Literal::Str(want), Value::String(got)) => want != got,
            (Literal::Long(want), Value::Number(got)) => got.as_i64().is_some_and(|g| g != *want),
            (Literal::Bool(want), Value::Bool(got)) => want != got,
            _ => false,
        }
    }
}

impl Literal {
    fn is_str(&self, s: &str) -> bool {
        // A literal of another type never equals a string fact: but such a
        // policy does not validate, so this is not reached; not ruled out.
        match self {
            Literal::Str(want) => want == s,
            _ => true,
        }
    }
}

/// The operands of `body`'s `&&` chain, left to right.
fn flatten_and<'a>(body: &'a Value, out: &mut Vec<&'a Value>) {
    match body.get("&&") {
        Some(and) => match (and.get("left"), and.get("right")) {
            (Some(left), Some(right)) => {
                flatten_and(left, out);
                flatten_and(right, out);
            }
            _ => out.push(body),
        },
        None => out.push(body),
    }
}

/// `attribute == literal` (either way round) as a guard.
fn equality(expr: &Value) -> Option<Guard> {
    let eq = expr.get("==")?;
    let (left, right) = (eq.get("left")?, eq.get("right")?);
    let (on, literal) = match (on_of(left), literal_of(right)) {
        (Some(on), Some(literal)) => (on, literal),
        _ => (on_of(right)?, literal_of(left)?),
    };
    Some(Guard {
        on,
        literal,
        tested_first: false,
    })
}

/// The argument `context.args has NAME` tests, from its `has` operands.
fn args_attr(has: &Value) -> Option<&str> {
    let of = has.get("left")?.get(".")?;
    let is_args =
        of.get("attr")?.as_str()? == "args" && of.get("left")?.get("Var")?.as_str()? == "context";
    is_args.then_some(has.get("attr")?.as_str()?)
}

fn on_of(expr: &Value) -> Option<On> {
    let get = expr.get(".")?;
    let attr = get.get("attr")?.as_str()?;
    let of = get.get("left")?;
    if let Some(var) = of.get("Var") {
        return match (var.as_str()?, attr) {
            ("principal", "brand") => Some(On::Brand),
            ("principal", "role") => Some(On::Role),
            ("principal", "base_role") => Some(On::BaseRole),
            _ => None,
        };
    }
    let args = of.get(".")?;
    let is_args = args.get("attr")?.as_str()? == "args"
        && args.get("left")?.get("Var")?.as_str()? == "context";
    is_args.then(|| On::Arg(attr.to_string()))
}

fn literal_of(expr: &Value) -> Option<Literal> {
    match expr.get("Value")? {
        Value::String(s) => Some(Literal::Str(s.clone())),
        Value::Number(n) => n.as_i64().map(Literal::Long),
        Value::Bool(b) => Some(Literal::Bool(*b)),
        _ => None,
    }
}
