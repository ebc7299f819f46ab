//! The partition tree as the catalog describes it: every relation under the target
//! (`pg_partition_tree`), each partitioned table's key (`pg_partitioned_table`) and each
//! partition's bound (`pg_get_expr(relpartbound)`, its values cast back to binary by the
//! server), and whatever makes COPY straight into a leaf differ from COPY into the parent.

use super::bound::{BoundText, Literal};
use super::hash::KeyKind;
use super::shard;
use super::{Bound, Datum, KeyColumn, Leaf, Node, Router, Routing, Strategy, Target};
use crate::resolve::RawValue;
use crate::{query_error, quote_ident, ConnectOptions, Result, TableInfo};
use inrush_core::TargetColumn;
use tokio_postgres::Client;

/// One relation of the tree.
struct Relation {
    oid: u32,
    parent: Option<u32>,
    kind: String,
    name: String,
    qualified: String,
    bound: String,
}

/// One column of a partitioned table's key, as the catalog says.
struct KeyRow {
    relation: u32,
    strategy: String,
    /// `None` for an expression.
    column: Option<String>,
    type_name: String,
    type_sql: String,
    c_ordered: bool,
    deterministic: bool,
    default_opclass: bool,
}

/// How `table`'s rows are routed when the load feeds `columns`: by inrush when it can
/// reproduce the server's choice exactly and COPY into the leaves means what COPY into the
/// table means; else by the server, with the reason. `target`: how the coordinator was
/// reached, for foreign servers that leave their host out.
pub async fn routing(
    client: &Client,
    table: &TableInfo,
    columns: &[TargetColumn],
    target: &ConnectOptions,
) -> Result<Routing> {
    let tree = read_tree(client, table.oid).await?;
    if let Some(reason) = leaves_differ(client, table, columns).await? {
        return Ok(Routing::Server(reason));
    }
    let keys = read_keys(client, &tree).await?;
    let mut all = match parted(client, &tree, &keys, columns).await? {
        Ok(all) => all,
        Err(reason) => return Ok(Routing::Server(reason)),
    };
    let mut leaves = Vec::new();
    let Some(root) = build(&mut all, table.oid, &mut leaves) else {
        return Ok(Routing::Server(format!(
            "the partition tree of {} changed while it was read",
            table.qualified()
        )));
    };
    let foreign: Vec<u32> = tree
        .iter()
        .filter(|r| r.kind == "f")
        .map(|r| r.oid)
        .filter(|oid| leaves.iter().any(|l| l.oid == *oid))
        .collect();
    let (remotes, shards) = match shard::remotes(client, &foreign, columns, target).await? {
        Ok(found) => found,
        Err(reason) => return Ok(Routing::Server(reason)),
    };
    for (oid, remote) in foreign.into_iter().zip(remotes) {
        if let Some(leaf) = leaves.iter_mut().find(|l| l.oid == oid) {
            leaf.remote = Some(remote);
        }
    }
    Ok(Routing::Client(Router {
        root,
        leaves,
        shards,
    }))
}

async fn read_tree(client: &Client, oid: u32) -> Result<Vec<Relation>> {
    let rows = client
        .query(
            "SELECT t.relid::oid, t.parentrelid::oid, c.relkind::text, n.nspname::text, \
                    c.relname::text, coalesce(pg_get_expr(c.relpartbound, c.oid), '') \
             FROM pg_partition_tree($1::oid::regclass) t \
             JOIN pg_class c ON c.oid = t.relid JOIN pg_namespace n ON n.oid = c.relnamespace \
             ORDER BY t.level, c.oid",
            &[&oid],
        )
        .await
        .map_err(query_error("reading the partition tree"))?;
    Ok(rows
        .iter()
        .map(|r| Relation {
            oid: r.get(0),
            parent: r.get(1),
            kind: r.get(2),
            qualified: format!(
                "{}.{}",
                quote_ident(r.get::<_, &str>(3)),
                quote_ident(r.get::<_, &str>(4))
            ),
            name: r.get(4),
            bound: r.get(5),
        })
        .collect())
}

/// Why COPY straight into the leaves would not do what COPY into the table does, if it would
/// not: a leaf without INSERT privilege (COPY into the parent checks the parent's alone), row
/// security, a statement trigger on a partitioned table (it fires only for COPY into that
/// table), a trigger on a foreign leaf (it fires on the coordinator, which COPY on the shard
/// passes by), or a column the input omits whose default or identity differs.
async fn leaves_differ(
    client: &Client,
    table: &TableInfo,
    columns: &[TargetColumn],
) -> Result<Option<String>> {
    let loaded: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    let row = client
        .query_one(
            "WITH tree AS (SELECT relid::oid AS oid, isleaf FROM pg_partition_tree($1::oid::regclass)) \
             SELECT \
               (SELECT min(t.oid::regclass::text) FROM tree t WHERE t.isleaf \
                  AND NOT has_table_privilege(t.oid, 'INSERT')), \
               (SELECT min(c.oid::regclass::text) FROM tree t JOIN pg_class c ON c.oid = t.oid \
                  WHERE c.relrowsecurity), \
               (SELECT min(g.tgname || ' on ' || g.tgrelid::regclass::text) FROM tree t \
                  JOIN pg_trigger g ON g.tgrelid = t.oid \
                  WHERE NOT t.isleaf AND NOT g.tgisinternal AND g.tgtype & 1 = 0), \
               (SELECT min(a.attname || ' of ' || t.oid::regclass::text) FROM tree t \
                  JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped \
                  JOIN pg_attribute p ON p.attrelid = $1 AND p.attname = a.attname \
                  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum \
                  LEFT JOIN pg_attrdef pd ON pd.adrelid = p.attrelid AND pd.adnum = p.attnum \
                  WHERE t.isleaf AND NOT (a.attname::text = ANY($2::text[])) \
                    AND (pg_get_expr(ad.adbin, ad.adrelid) IS DISTINCT FROM pg_get_expr(pd.adbin, pd.adrelid) \
                         OR a.attidentity <> p.attidentity)), \
               (SELECT min(g.tgname || ' on ' || t.oid::regclass::text) FROM tree t \
                  JOIN pg_class c ON c.oid = t.oid AND c.relkind = 'f' \
                  JOIN pg_trigger g ON g.tgrelid = t.oid WHERE NOT g.tgisinternal)",
            &[&table.oid, &loaded],
        )
        .await
        .map_err(query_error("reading the partitions' privileges, triggers and defaults"))?;
    let reasons = [
        row.get::<_, Option<String>>(0).map(|leaf| format!("no INSERT privilege on partition {leaf} (COPY into the parent checks the parent's alone)")),
        row.get::<_, Option<String>>(1).map(|rel| format!("row-level security on {rel}: its policies depend on the table named")),
        row.get::<_, Option<String>>(2).map(|trigger| format!("statement trigger {trigger} fires only for COPY into that table")),
        row.get::<_, Option<String>>(3).map(|column| format!("column {column}, which the input omits, has a default or identity other than the parent's")),
        row.get::<_, Option<String>>(4).map(|trigger| format!("trigger {trigger} fires on the coordinator, which a COPY straight into the shard passes by")),
    ];
    Ok(reasons.into_iter().flatten().next())
}

async fn read_keys(client: &Client, tree: &[Relation]) -> Result<Vec<KeyRow>> {
    let partitioned: Vec<u32> = tree
        .iter()
        .filter(|r| r.kind == "p")
        .map(|r| r.oid)
        .collect();
    let rows = client
        .query(
            "SELECT p.partrelid, p.partstrat::text, a.attname::text, \
                    coalesce(b.typname::text, ''), coalesce(format_type(a.atttypid, a.atttypmod), ''), \
                    CASE WHEN k.coll = 0 THEN true \
                         WHEN k.coll = 100 THEN (SELECT d.datcollate IN ('C', 'POSIX') \
                              AND coalesce(to_jsonb(d)->>'datlocprovider', 'c') = 'c' \
                              FROM pg_database d WHERE d.datname = current_database()) \
                         ELSE co.collname IN ('C', 'POSIX') AND co.collprovider = 'c' END, \
                    coalesce(co.collisdeterministic, true), o.opcdefault \
             FROM pg_partitioned_table p \
             CROSS JOIN LATERAL unnest(p.partattrs::int2[], p.partclass::oid[], p.partcollation::oid[]) \
                  WITH ORDINALITY AS k(attnum, opclass, coll, i) \
             LEFT JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = k.attnum AND k.attnum > 0 \
             LEFT JOIN pg_type t ON t.oid = a.atttypid \
             LEFT JOIN pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END \
             LEFT JOIN pg_collation co ON co.oid = k.coll \
             JOIN pg_opclass o ON o.oid = k.opclass \
             WHERE p.partrelid = ANY($1::oid[]) ORDER BY p.partrelid, k.i",
            &[&partitioned],
        )
        .await
        .map_err(query_error("reading the partition keys"))?;
    Ok(rows
        .iter()
        .map(|r| KeyRow {
            relation: r.get(0),
            strategy: r.get(1),
            column: r.get(2),
            type_name: r.get(3),
            type_sql: r.get(4),
            c_ordered: r.get::<_, Option<bool>>(5).unwrap_or(false),
            deterministic: r.get(6),
            default_opclass: r.get(7),
        })
        .collect())
}

/// What the catalog says of one partitioned table, ready to build its node from.
struct Parted<'t> {
    relation: &'t Relation,
    strategy: Strategy,
    key: Vec<KeyColumn>,
    children: Vec<(&'t Relation, BoundText)>,
    /// The children's bound values in order, in binary (`None` for NULL).
    values: Vec<Option<Vec<u8>>>,
}

/// Every partitioned table of the tree read and its bounds' values cast, or why inrush
/// cannot route one of them.
async fn parted<'t>(
    client: &Client,
    tree: &'t [Relation],
    keys: &[KeyRow],
    columns: &[TargetColumn],
) -> Result<Result<Vec<Parted<'t>>, String>> {
    let mut all = Vec::new();
    for relation in tree.iter().filter(|r| r.kind == "p") {
        let rows: Vec<&KeyRow> = keys.iter().filter(|k| k.relation == relation.oid).collect();
        let strategy = match rows.first().map(|k| k.strategy.as_str()) {
            Some("r") => Strategy::Range,
            Some("l") => Strategy::List,
            Some("h") => Strategy::Hash,
            _ => {
                return Ok(Err(format!(
                    "no partition key read for {}",
                    relation.qualified
                )))
            }
        };
        let key = match key_columns(&relation.qualified, strategy, &rows, columns) {
            Ok(key) => key,
            Err(reason) => return Ok(Err(reason)),
        };
        let mut children = Vec::new();
        for child in tree.iter().filter(|r| r.parent == Some(relation.oid)) {
            let Some(bound) = BoundText::parse(&child.bound) else {
                return Ok(Err(format!(
                    "the bound of {} reads `{}`, which inrush does not parse",
                    child.qualified, child.bound
                )));
            };
            children.push((child, bound));
        }
        let bounds: Vec<&BoundText> = children.iter().map(|(_, b)| b).collect();
        let values = bound_values(client, &rows, &bounds).await?;
        all.push(Parted {
            relation,
            strategy,
            key,
            children,
            values,
        });
    }
    Ok(Ok(all))
}

/// The routing node of partitioned table `oid` and, recursively, of its partitions; each
/// leaf is numbered as it is met. `None` if one of them was not read (the tree changed).
fn build(all: &mut Vec<Parted>, oid: u32, leaves: &mut Vec<Leaf>) -> Option<Node> {
    let at = all.iter().position(|p| p.relation.oid == oid)?;
    let parted = all.swap_remove(at);
    let mut node = Node {
        name: parted.relation.name.clone(),
        strategy: parted.strategy,
        key: parted.key,
        children: Vec::new(),
        default: None,
        greatest_modulus: 1,
    };
    let mut values = parted.values.into_iter();
    let mut take = |literals: Vec<Literal>| -> Vec<Datum> {
        literals
            .into_iter()
            .map(|l| match l {
                Literal::MinValue => Datum::Min,
                Literal::MaxValue => Datum::Max,
                Literal::Value(_) | Literal::Null => {
                    values.next().flatten().map_or(Datum::Min, Datum::Value)
                }
            })
            .collect()
    };
    for (child, text) in parted.children {
        let target = match child.kind.as_str() {
            "p" => Target::Node(Box::new(build(all, child.oid, leaves)?)),
            _ => {
                leaves.push(Leaf {
                    oid: child.oid,
                    qualified: child.qualified.clone(),
                    remote: None,
                });
                Target::Leaf(leaves.len() as u32 - 1)
            }
        };
        let bound = match text {
            BoundText::Default => {
                node.default = Some(target);
                continue;
            }
            BoundText::Hash { modulus, remainder } => {
                node.greatest_modulus = node.greatest_modulus.max(modulus);
                Bound::Hash { modulus, remainder }
            }
            // NULL came back as no value, which only a list holds.
            BoundText::List(list) => Bound::List(
                take(list)
                    .into_iter()
                    .map(|d| match d {
                        Datum::Value(v) => Some(v),
                        Datum::Min | Datum::Max => None,
                    })
                    .collect(),
            ),
            BoundText::Range { from, to } => Bound::Range {
                from: take(from),
                to: take(to),
            },
        };
        node.children.push((bound, target));
    }
    Some(node)
}

/// The key's columns, or why inrush cannot route on them.
fn key_columns(
    relation: &str,
    strategy: Strategy,
    rows: &[&KeyRow],
    columns: &[TargetColumn],
) -> Result<Vec<KeyColumn>, String> {
    rows.iter()
        .map(|k| {
            let Some(name) = &k.column else {
                return Err(format!("the partition key of {relation} is an expression, which inrush does not evaluate"));
            };
            let what = format!("key column {name} of {relation}");
            let kind = KeyKind::of_type(&k.type_name).ok_or_else(|| {
                format!("{what} is of type {}, which inrush does not {} on the client", k.type_sql, match strategy { Strategy::Hash => "hash", _ => "order" })
            })?;
            if !k.default_opclass {
                return Err(format!("{what} uses an operator class other than its type's default"));
            }
            if !k.deterministic {
                return Err(format!("{what} has a nondeterministic collation"));
            }
            let text = matches!(k.type_name.as_str(), "text" | "varchar");
            if strategy == Strategy::Range && text && !k.c_ordered {
                return Err(format!("{what} is a range key ordered by a collation other than C, whose order inrush does not reproduce"));
            }
            let position = columns.iter().position(|c| c.name == *name).ok_or_else(|| {
                format!("{what} is not among the loaded columns (its default decides the partition)")
            })?;
            Ok(KeyColumn {
                name: name.clone(),
                position,
                kind,
                type_name: k.type_name.clone(),
            })
        })
        .collect()
}

/// Every value of the bounds of one partitioned table's children, in order, each cast by
/// the server from its text to its key column's type and read in binary (`None` for NULL).
async fn bound_values(
    client: &Client,
    keys: &[&KeyRow],
    bounds: &[&BoundText],
) -> Result<Vec<Option<Vec<u8>>>> {
    // Values in the order `node` takes them, with their key column.
    let mut wanted: Vec<(usize, Option<String>)> = Vec::new();
    let mut push = |literals: &[Literal]| {
        for (i, l) in literals.iter().enumerate() {
            match l {
                Literal::Value(v) => wanted.push((i, Some(v.clone()))),
                Literal::Null => wanted.push((i, None)),
                Literal::MinValue | Literal::MaxValue => {}
            }
        }
    };
    for bound in bounds {
        match bound {
            BoundText::Range { from, to } => {
                push(from);
                push(to);
            }
            // A list key has one column: every value is the first column's.
            BoundText::List(values) => {
                for l in values {
                    push(std::slice::from_ref(l));
                }
            }
            BoundText::Hash { .. } | BoundText::Default => {}
        }
    }
    let mut values = vec![None; wanted.len()];
    for (column, key) in keys.iter().enumerate() {
        let (at, texts): (Vec<usize>, Vec<&str>) = wanted
            .iter()
            .enumerate()
            .filter_map(|(i, (c, v))| {
                (*c == column)
                    .then_some(v.as_deref().map(|v| (i, v)))
                    .flatten()
            })
            .unzip();
        if texts.is_empty() {
            continue;
        }
        let sql = format!(
            "SELECT CAST(v AS {}) FROM unnest($1::text[]) WITH ORDINALITY AS u(v, i) ORDER BY i",
            key.type_sql
        );
        let rows = client
            .query(&sql, &[&texts])
            .await
            .map_err(query_error("reading the partition bounds' values"))?;
        for (i, row) in at.into_iter().zip(rows) {
            values[i] = row.get::<_, Option<RawValue>>(0).map(|r| r.0);
        }
    }
    Ok(values)
}
