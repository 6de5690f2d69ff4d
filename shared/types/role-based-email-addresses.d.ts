declare module "role-based-email-addresses" {
  const roles: string[];
  export default roles;
}
