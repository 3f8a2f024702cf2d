//! Column types the harness stores as text, in whichever database holds the store: identifiers,
//! canonical action text, JSON documents. One definition serves SQLite and PostgreSQL (through
//! sqlx's `Any` driver, which knows text but not JSON).

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Implements sqlx's `Type`, `Encode` and `Decode` for `$ty`, stored as text: `$to` makes the
/// text from `&self` (bound as `$v`), `$from` parses it back from `&str` (bound as `$s`) into a
/// `Result` whose error says what is wrong with the stored value.
/// sqlx's `Type` for `$ty` (generic over `$g`): a text column, whichever database.
macro_rules! text_type {
    ([$($g:ident),*] $ty:ty) => {
        impl<DB: sqlx::Database, $($g),*> sqlx::Type<DB> for $ty
        where
            String: sqlx::Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <String as sqlx::Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <String as sqlx::Type<DB>>::compatible(ty)
            }
        }
    };
}

pub(crate) use text_type;

macro_rules! text_column {
    ($ty:ty, |$v:ident| $to:expr, |$s:ident| $from:expr) => {
        $crate::store::column::text_type!([] $ty);

        impl<'q, DB: sqlx::Database> sqlx::Encode<'q, DB> for $ty
        where
            String: sqlx::Encode<'q, DB>,
        {
            fn encode_by_ref(
                &self,
                buf: &mut <DB as sqlx::Database>::ArgumentBuffer<'q>,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                let $v = self;
                let text: String = $to;
                <String as sqlx::Encode<'q, DB>>::encode(text, buf)
            }
        }

        impl<'r, DB: sqlx::Database> sqlx::Decode<'r, DB> for $ty
        where
            &'r str: sqlx::Decode<'r, DB>,
        {
            fn decode(
                value: <DB as sqlx::Database>::ValueRef<'r>,
            ) -> Result<Self, sqlx::error::BoxDynError> {
                let $s = <&'r str as sqlx::Decode<'r, DB>>::decode(value)?;
                Ok($from?)
            }
        }
    };
}

/// A JSON document in a text column: what the row holds is `T`, written and read with serde.
/// A value that does not parse is a decode error naming the column (damage, never a default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T> Json<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Json<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

text_type!([T] Json<T>);

impl<'q, DB: sqlx::Database, T: Serialize> sqlx::Encode<'q, DB> for Json<T>
where
    String: sqlx::Encode<'q, DB>,
{
    fn encode_by_ref(
        &self,
        buf: &mut <DB as sqlx::Database>::ArgumentBuffer<'q>,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        <String as sqlx::Encode<'q, DB>>::encode(serde_json::to_string(&self.0)?, buf)
    }
}

impl<'r, DB: sqlx::Database, T: DeserializeOwned> sqlx::Decode<'r, DB> for Json<T>
where
    &'r str: sqlx::Decode<'r, DB>,
{
    fn decode(value: <DB as sqlx::Database>::ValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        let text = <&'r str as sqlx::Decode<'r, DB>>::decode(value)?;
        Ok(Self(serde_json::from_str(text)?))
    }
}

/// A JSON document in a nullable text column: NULL is `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonOpt<T>(pub Option<T>);

text_type!([T] JsonOpt<T>);

impl<'r, DB: sqlx::Database, T: DeserializeOwned> sqlx::Decode<'r, DB> for JsonOpt<T>
where
    &'r str: sqlx::Decode<'r, DB>,
{
    fn decode(value: <DB as sqlx::Database>::ValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        if sqlx::ValueRef::is_null(&value) {
            return Ok(Self(None));
        }
        Ok(Self(Some(Json::<T>::decode(value)?.0)))
    }
}

/// Row fields that hold JSON keep their own types: `#[sqlx(try_from = "Json<T>")]` (or
/// `JsonOpt<T>` for a nullable one) reads the column through these conversions.
macro_rules! json_fields {
    ($($ty:ty),* $(,)?) => {
        $(
            impl From<Json<$ty>> for $ty {
                fn from(json: Json<$ty>) -> Self {
                    json.0
                }
            }

            impl From<JsonOpt<$ty>> for Option<$ty> {
                fn from(json: JsonOpt<$ty>) -> Self {
                    json.0
                }
            }
        )*
    };
}

json_fields!(
    Vec<String>,
    Vec<crate::policy::shell::Segment>,
    Vec<crate::journal::FileImage>,
    crate::approval::ContextSummary,
    crate::context::Manifest,
    crate::context::chain::Record,
    crate::compat::Compat,
    crate::resume::RecoverySummary,
    crate::stage::effect::StagedEffect,
);

/// A unit enum's stored text: its serde name (snake_case), as it has always been stored.
pub(crate) fn enum_text<T: Serialize + std::fmt::Debug>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        _ => format!("{value:?}"),
    }
}

/// A unit enum from its stored text; an unknown name is an error naming it.
pub(crate) fn enum_parse<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(text.to_owned()))
        .map_err(|_| format!("unknown value {text:?} for {}", std::any::type_name::<T>()))
}

macro_rules! enum_columns {
    ($($ty:ty),* $(,)?) => {
        $(text_column!($ty, |v| enum_text(v), |s| enum_parse::<$ty>(s));)*
    };
}

enum_columns!(
    crate::journal::EffectClass,
    crate::journal::IntentStatus,
    crate::failure::FailureClass,
    crate::policy::Risk,
    crate::checkpoint::Level,
    crate::checkpoint::DamageKind,
    crate::run::RunState,
    crate::step::StepKind,
    crate::step::StepStatus,
    crate::approval::grant::Matcher,
    crate::approval::Scope,
    crate::approval::Status,
    crate::approval::OnTimeout,
);

macro_rules! id_columns {
    ($($ty:ty),* $(,)?) => {
        // Stored as the hyphenated text the database has always held.
        $(text_column!($ty, |v| v.to_string(), |s| s.parse::<$ty>());)*
    };
}

id_columns!(
    crate::ids::RunId,
    crate::ids::IntentId,
    crate::ids::ApprovalId,
    crate::ids::GrantId,
    crate::ids::FactId,
    crate::ids::SuggestionId,
);

// A recorded call is stored as its canonical text, exactly as it was judged.
text_column!(
    crate::action::RecordedCall,
    |v| v.text().to_owned(),
    |s| crate::action::RecordedCall::parse(s)
);
