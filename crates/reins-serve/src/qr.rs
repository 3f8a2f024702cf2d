//! The pairing link as a QR code: for the terminal (two rows per character) and as a PNG.

use std::path::Path;

use qrcode::render::unicode::Dense1x2;
use qrcode::QrCode;

use crate::ServeError;

fn code(text: &str) -> Result<QrCode, ServeError> {
    QrCode::new(text.as_bytes()).map_err(|e| ServeError::Qr(e.to_string()))
}

/// The code drawn with block characters, dark on light, with its quiet zone.
pub fn terminal(text: &str) -> Result<String, ServeError> {
    Ok(code(text)?
        .render::<Dense1x2>()
        .dark_color(Dense1x2::Light)
        .light_color(Dense1x2::Dark)
        .quiet_zone(true)
        .build())
}

/// The code as a PNG, 8 pixels a module.
pub fn png(text: &str, out: &Path) -> Result<(), ServeError> {
    let image = code(text)?
        .render::<image::Luma<u8>>()
        .module_dimensions(8, 8)
        .build();
    image
        .save_with_format(out, image::ImageFormat::Png)
        .map_err(|e| ServeError::Qr(format!("cannot write {}: {e}", out.display())))
}

/// The code as PNG bytes, 8 pixels a module.
pub fn png_bytes(text: &str) -> Result<Vec<u8>, ServeError> {
    let image = code(text)?
        .render::<image::Luma<u8>>()
        .module_dimensions(8, 8)
        .build();
    let mut out = std::io::Cursor::new(Vec::new());
    image
        .write_to(&mut out, image::ImageFormat::Png)
        .map_err(|e| ServeError::Qr(e.to_string()))?;
    Ok(out.into_inner())
}
