//! OTLP export: the process's tracing subscriber with an OpenTelemetry
//! layer, a tracer and a meter provider sending to an OTLP endpoint, and a
//! guard that flushes them when the program ends.

use std::collections::BTreeMap;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde::Deserialize;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// Which spans are exported unless [`TelemetryConfig::filter`] says
/// otherwise: agentry's at `info` and above (the GenAI spans), everything
/// else's warnings.
pub const DEFAULT_FILTER: &str = "warn,agentry=info";

/// The service name when neither the config nor `OTEL_SERVICE_NAME` gives one.
pub const DEFAULT_SERVICE_NAME: &str = "agentry";

/// How spans and metrics travel to the endpoint (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Protocol {
    /// OTLP over gRPC (port 4317 by default), in plain text: for a collector
    /// behind TLS use HTTP (`https://…`).
    #[serde(rename = "grpc")]
    Grpc,
    /// OTLP over HTTP, protobuf bodies (port 4318 by default): the default.
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// OTLP over HTTP, JSON bodies.
    #[serde(rename = "http/json")]
    HttpJson,
}

impl Protocol {
    /// The protocol an `OTEL_EXPORTER_OTLP_PROTOCOL` value names.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "grpc" => Some(Self::Grpc),
            "http/protobuf" => Some(Self::HttpProtobuf),
            "http/json" => Some(Self::HttpJson),
            _ => None,
        }
    }
}

/// The `[telemetry]` table: every field optional, the standard `OTEL_*`
/// environment filling in what it leaves out.
///
/// Export is on when `enabled` says so, else when an endpoint is given
/// here or by `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`;
/// `OTEL_SDK_DISABLED=true` turns it off whatever else says.
///
/// ```
/// use agentry_telemetry::{Protocol, TelemetryConfig};
///
/// let config: TelemetryConfig = serde_json::from_value(serde_json::json!({
///     "endpoint": "http://127.0.0.1:4317",
///     "protocol": "grpc",
///     "capture_content": true,
/// }))?;
/// assert_eq!(config.protocol, Some(Protocol::Grpc));
/// assert!(config.is_enabled());
/// assert!(!TelemetryConfig { enabled: Some(false), ..config }.is_enabled());
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// Export or not, whatever the environment says.
    pub enabled: Option<bool>,
    /// The collector's base address (`/v1/traces` and `/v1/metrics` are
    /// added for HTTP), as `OTEL_EXPORTER_OTLP_ENDPOINT` would give it.
    pub endpoint: Option<String>,
    /// gRPC or HTTP; else `OTEL_EXPORTER_OTLP_PROTOCOL`, else HTTP/protobuf.
    pub protocol: Option<Protocol>,
    /// `service.name`, unless `OTEL_SERVICE_NAME` is set.
    pub service_name: Option<String>,
    /// Put message and argument content on spans (off by default).
    pub capture_content: Option<bool>,
    /// Which spans to export, as `RUST_LOG` directives ([`DEFAULT_FILTER`]).
    pub filter: Option<String>,
    /// Headers sent with every export (added to `OTEL_EXPORTER_OTLP_HEADERS`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Also send the GenAI metrics; else on unless `OTEL_METRICS_EXPORTER=none`.
    pub metrics: Option<bool>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// Whether an `OTEL_*_EXPORTER` variable turns its signal off.
fn names_none(name: &str) -> bool {
    env(name).is_some_and(|value| value.trim().eq_ignore_ascii_case("none"))
}

impl TelemetryConfig {
    /// Whether spans are exported at all.
    pub fn is_enabled(&self) -> bool {
        if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            || names_none("OTEL_TRACES_EXPORTER")
        {
            return false;
        }
        self.enabled.unwrap_or_else(|| {
            self.endpoint.is_some()
                || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
                || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
        })
    }

    /// The protocol spans go out with: this table's, the environment's, or
    /// HTTP/protobuf.
    pub fn protocol(&self) -> Result<Protocol, TelemetryError> {
        if let Some(protocol) = self.protocol {
            return Ok(protocol);
        }
        for name in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if let Some(value) = env(name) {
                return Protocol::parse(&value).ok_or_else(|| {
                    TelemetryError::Config(format!(
                        "{name}={value}: expected grpc, http/protobuf or http/json"
                    ))
                });
            }
        }
        Ok(Protocol::HttpProtobuf)
    }
}

/// Why telemetry could not start or stop.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A setting is wrong.
    #[error("telemetry: {0}")]
    Config(String),
    /// The OTLP exporter could not be built.
    #[error("telemetry: the OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// Sending what was buffered, or stopping, failed for spans or metrics
    /// (`signal`).
    #[error("telemetry: sending {signal}: {source}")]
    Send {
        /// `spans` or `metrics`.
        signal: &'static str,
        /// The SDK's error.
        source: opentelemetry_sdk::error::OTelSdkError,
    },
    /// The filter's directives do not parse.
    #[error("telemetry: filter: {0}")]
    Filter(#[from] tracing_subscriber::filter::ParseError),
    /// A subscriber was already installed for the process.
    #[error("telemetry: {0}")]
    Subscriber(#[from] tracing_subscriber::util::TryInitError),
}

/// The running exporters; flushes and shuts them down when dropped (or by
/// [`Telemetry::shutdown`], which says whether that worked).
#[derive(Debug, Default)]
#[must_use = "dropping it flushes and stops the export"]
pub struct Telemetry {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
}

impl Telemetry {
    /// Install the process's subscriber: an OpenTelemetry layer when
    /// `config` [is enabled](TelemetryConfig::is_enabled), and a log to
    /// stderr when `RUST_LOG` is set. With neither nothing is installed and
    /// tracing costs what it costs with no subscriber.
    ///
    /// With gRPC this must run inside a tokio runtime.
    pub fn init(config: &TelemetryConfig) -> Result<Self, TelemetryError> {
        let log = env("RUST_LOG").map(|_| {
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(EnvFilter::from_default_env())
        });
        if !config.is_enabled() {
            if let Some(log) = log {
                Registry::default().with(log).try_init()?;
            }
            return Ok(Self::default());
        }
        let (layer, telemetry) = Self::build(config)?;
        Registry::default().with(log).with(layer).try_init()?;
        // Only once the subscriber is in: a failure above leaves nothing
        // global behind.
        telemetry.install(config);
        Ok(telemetry)
    }

    /// The OpenTelemetry layer alone, for a program that builds its own
    /// subscriber, and the exporters behind it (installed as the global
    /// tracer and meter providers). Sets the content opt-in from `config`.
    pub fn layer<S>(
        config: &TelemetryConfig,
    ) -> Result<(impl Layer<S> + 'static, Self), TelemetryError>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        let (layer, telemetry) = Self::build(config)?;
        telemetry.install(config);
        Ok((layer, telemetry))
    }

    /// The global tracer and meter providers, and the content opt-in.
    fn install(&self, config: &TelemetryConfig) {
        if let Some(meter) = &self.meter {
            opentelemetry::global::set_meter_provider(meter.clone());
        }
        if let Some(tracer) = &self.tracer {
            opentelemetry::global::set_tracer_provider(tracer.clone());
        }
        if let Some(on) = config.capture_content {
            crate::set_capture_content(on);
        }
    }

    /// The layer and the exporters behind it, nothing installed yet.
    fn build<S>(config: &TelemetryConfig) -> Result<(impl Layer<S> + 'static, Self), TelemetryError>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        let filter = EnvFilter::try_new(config.filter.as_deref().unwrap_or(DEFAULT_FILTER))?;
        let protocol = config.protocol()?;
        let resource = resource(config);
        let tracer = SdkTracerProvider::builder()
            .with_resource(resource.clone())
            .with_batch_exporter(span_exporter(config, protocol)?)
            .build();
        let meter = match config
            .metrics
            .unwrap_or_else(|| !names_none("OTEL_METRICS_EXPORTER"))
        {
            true => Some(
                SdkMeterProvider::builder()
                    .with_resource(resource)
                    .with_periodic_exporter(metric_exporter(config, protocol)?)
                    .build(),
            ),
            false => None,
        };
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer.tracer("agentry"))
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_filter(filter);
        let telemetry = Self {
            tracer: Some(tracer),
            meter,
        };
        Ok((layer, telemetry))
    }

    /// Whether anything is exported.
    pub fn is_exporting(&self) -> bool {
        self.tracer.is_some()
    }

    /// Send what is buffered now.
    pub fn flush(&self) -> Result<(), TelemetryError> {
        let (tracer, meter) = (self.tracer.clone(), self.meter.clone());
        off_thread(move || {
            if let Some(tracer) = tracer {
                tracer.force_flush().map_err(sending("spans"))?;
            }
            if let Some(meter) = meter {
                meter.force_flush().map_err(sending("metrics"))?;
            }
            Ok(())
        })
    }

    /// Send what is buffered and stop the exporters.
    pub fn shutdown(mut self) -> Result<(), TelemetryError> {
        self.stop()
    }

    fn stop(&mut self) -> Result<(), TelemetryError> {
        let (tracer, meter) = (self.tracer.take(), self.meter.take());
        if tracer.is_none() && meter.is_none() {
            return Ok(());
        }
        off_thread(move || {
            let traced = tracer.map_or(Ok(()), |tracer| tracer.shutdown());
            let metered = meter.map_or(Ok(()), |meter| meter.shutdown());
            traced.map_err(sending("spans"))?;
            metered.map_err(sending("metrics"))
        })
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(error) = self.stop() {
            eprintln!("{error}");
        }
    }
}

fn sending(
    signal: &'static str,
) -> impl FnOnce(opentelemetry_sdk::error::OTelSdkError) -> TelemetryError {
    move |source| TelemetryError::Send { signal, source }
}

/// Flushing blocks; on a runtime's own thread it could wait on itself, so
/// it runs on a thread of its own.
fn off_thread(
    work: impl FnOnce() -> Result<(), TelemetryError> + Send + 'static,
) -> Result<(), TelemetryError> {
    std::thread::spawn(work).join().unwrap_or_else(|_| {
        Err(TelemetryError::Send {
            signal: "spans and metrics",
            source: opentelemetry_sdk::error::OTelSdkError::InternalFailure(
                "the flush panicked".into(),
            ),
        })
    })
}

fn resource(config: &TelemetryConfig) -> Resource {
    // The builder reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; a
    // name given here would override the environment's, so only without one.
    let builder = Resource::builder();
    let named_by_env = env("OTEL_SERVICE_NAME").is_some()
        || env("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|attributes| {
            attributes
                .split(',')
                .any(|pair| pair.trim_start().starts_with("service.name="))
        });
    match named_by_env {
        true => builder.build(),
        false => builder
            .with_service_name(
                config
                    .service_name
                    .clone()
                    .unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned()),
            )
            .build(),
    }
}

/// The endpoint a signal goes to when the config names a base address.
fn signal_endpoint(base: &str, protocol: Protocol, path: &str) -> String {
    match protocol {
        Protocol::Grpc => base.to_owned(),
        _ => format!("{}/{path}", base.trim_end_matches('/')),
    }
}

/// An exporter of one signal (`SpanExporter`, `MetricExporter`: the same
/// builder methods on different types) for `protocol`, to the config's
/// endpoint (with `path` for HTTP) or the environment's.
macro_rules! exporter {
    ($exporter:ty, $config:expr, $protocol:expr, $path:literal) => {{
        let (config, protocol): (&TelemetryConfig, Protocol) = ($config, $protocol);
        let endpoint = config
            .endpoint
            .as_deref()
            .map(|base| signal_endpoint(base, protocol, $path));
        match protocol {
            Protocol::Grpc => {
                let builder = <$exporter>::builder().with_tonic();
                let builder = match endpoint {
                    Some(endpoint) => builder.with_endpoint(endpoint),
                    None => builder,
                };
                builder.with_metadata(metadata(&config.headers)?).build()?
            }
            Protocol::HttpProtobuf | Protocol::HttpJson => {
                use opentelemetry_otlp::WithHttpConfig;
                let builder = <$exporter>::builder()
                    .with_http()
                    .with_protocol(http_protocol(protocol))
                    .with_headers(config.headers.clone().into_iter().collect());
                match endpoint {
                    Some(endpoint) => builder.with_endpoint(endpoint),
                    None => builder,
                }
                .build()?
            }
        }
    }};
}

fn span_exporter(
    config: &TelemetryConfig,
    protocol: Protocol,
) -> Result<SpanExporter, TelemetryError> {
    Ok(exporter!(SpanExporter, config, protocol, "v1/traces"))
}

fn metric_exporter(
    config: &TelemetryConfig,
    protocol: Protocol,
) -> Result<MetricExporter, TelemetryError> {
    Ok(exporter!(MetricExporter, config, protocol, "v1/metrics"))
}

fn http_protocol(protocol: Protocol) -> opentelemetry_otlp::Protocol {
    match protocol {
        Protocol::HttpJson => opentelemetry_otlp::Protocol::HttpJson,
        _ => opentelemetry_otlp::Protocol::HttpBinary,
    }
}

fn metadata(
    headers: &BTreeMap<String, String>,
) -> Result<opentelemetry_otlp::tonic_types::metadata::MetadataMap, TelemetryError> {
    let mut map = http::HeaderMap::new();
    for (name, value) in headers {
        let key = http::HeaderName::try_from(name.as_str())
            .map_err(|_| TelemetryError::Config(format!("header name {name:?}")))?;
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|_| TelemetryError::Config(format!("header {name}: not a header value")))?;
        map.insert(key, value);
    }
    Ok(opentelemetry_otlp::tonic_types::metadata::MetadataMap::from_headers(map))
}
