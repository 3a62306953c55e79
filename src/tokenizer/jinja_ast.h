#pragma once
// Syntax tree of a parsed chat template. Every node records its template line for messages.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja_value.h"

namespace nextn::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,   // value
        Name,      // name
        List,      // args: items
        Dict,      // kwargs-like pairs in `entries`
        GetAttr,   // args[0].name
        GetItem,   // args[0][args[1]]
        Slice,     // args[0][args[1]:args[2]:args[3]] (null parts allowed)
        Call,      // args[0](args[1..], kwargs)
        Filter,    // args[0] | name(args[1..], kwargs)
        Test,      // args[0] is [not] name(args[1..])
        Unary,     // name in {"-", "+", "not"}; args[0]
        Binary,    // name is the operator; args[0], args[1]
        Compare,   // args[0] ops[0] args[1] ops[1] args[2] ...: Python's chained comparison
        Cond,      // args[1] if args[0] else args[2] (args[2] may be null)
    };
    Kind kind;
    int line = 0;
    std::string name;
    Value value;
    bool negated = false;
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    std::vector<std::pair<ExprPtr, ExprPtr>> entries;  // Dict
    std::vector<std::string> ops;                      // Compare
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
    enum class Kind { Text, Output, If, For, Set, SetBlock, Macro, Break, Continue, Scope };
    Kind kind;
    int line = 0;
    std::string text;                                  // Text
    ExprPtr expr;                                      // Output / For iterable / Set value
    std::vector<std::string> targets;                  // For loop names / Set names / Macro name
    std::string attr;                                  // Set ns.attr
    ExprPtr condition;                                 // For ... if condition
    Body body, else_body;                              // For / SetBlock / Macro / Scope
    std::vector<std::pair<ExprPtr, Body>> branches;    // If: (condition, body), else has null condition
    std::vector<std::pair<std::string, ExprPtr>> params;  // Macro: (name, default or null)
};

// Parses template source (trim_blocks and lstrip_blocks on, one trailing newline dropped, as
// transformers configures Jinja2). Throws nextn::Error naming the line on a syntax error or an
// unsupported construct.
Body parse_template(const std::string& source);

}  // namespace nextn::jinja
