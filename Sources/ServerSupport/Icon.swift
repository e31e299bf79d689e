/// Teamwork's icon (an SVG): the board's and the phone app's, one file for both.
public enum Icon {
    public static let svg: [UInt8] = PackageResources.icon_svg
}
