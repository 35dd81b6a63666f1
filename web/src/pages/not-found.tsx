import { Link } from '../router';

export function NotFoundPage() {
  return (
    <p>
      There is no such page. Go to the <Link to="/">overview</Link>.
    </p>
  );
}
